"""invoices.paid.handle - book a paid invoice.

Called once per matching event with the decoded event. Returning normally
is success; any exception or non-zero exit is a failure that Relay retries
(retries: 2 in template.yaml) and finally dead-letters.
"""
import os
import sys


def handle(event):
    invoice = event["invoice"]
    amount = invoice["amount"]
    currency = os.environ.get("CURRENCY", "EUR")
    limit = int(os.environ.get("APPROVAL_LIMIT", "10000"))
    if amount >= limit:
        # Deliberate failure for the retry/DLQ demo: large invoices need a
        # manual approval this handler cannot give.
        print(f"invoice {invoice['id']}: {amount} {currency} needs approval",
              file=sys.stderr)
        sys.exit(3)
    print(f"booked invoice {invoice['id']}: {amount} {currency}")
