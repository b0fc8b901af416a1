print("recd")
