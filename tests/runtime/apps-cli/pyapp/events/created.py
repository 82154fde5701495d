def handler(event):
    print("python got %s" % event["event_name"])
