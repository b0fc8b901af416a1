print("recctl")
