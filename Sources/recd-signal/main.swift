print("recd-signal")
