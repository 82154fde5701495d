"""invoices.large.review - flag a large invoice for a human reviewer."""


def review(event):
    invoice = event["invoice"]
    customer = event.get("customer", {}).get("email", "unknown customer")
    print(f"review requested for {invoice['id']} "
          f"({invoice['amount']}) from {customer}")
