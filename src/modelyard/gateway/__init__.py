"""(1) The forwarding gateway: the V2 front doors in front of a whole service, through the SDK."""
