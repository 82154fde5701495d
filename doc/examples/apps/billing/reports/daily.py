"""reports.daily.run - the daily-report schedule.

Schedule occurrences arrive as {"source": "relay.schedule", "app": ...,
"schedule": ..., "scheduled_at": ...}.
"""


def run(event):
    print(f"daily report for {event.get('scheduled_at', 'now')}")
