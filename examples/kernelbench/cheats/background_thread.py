# A cheating solution (for tests): returns an empty output at once and fills it from a thread
# after the call has returned (the timed call does none of the work).
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)

        def finish():
            time.sleep(0.002)
            torch.clamp(x, min=0.0, out=y)

        threading.Thread(target=finish).start()
        return y
