"""Tiny deterministic detectors for examples/video_infer.py's tests
(test_video_infer.py): --model infer_detectors:NAME, this folder being on
PYTHONPATH (conftest.py puts it there for subprocesses). Their outputs
depend on the decoded pixels, so the CSV shows what the decoder gave.

bright_box and grid take a NumPy float32 batch [N, 3, H, W] in [0, 1] and
return per image (boxes [K, 4] x1 y1 x2 y2 in input pixels, scores, labels);
torch_grid is grid as a torch.nn.Module (tensors on any device in and out)."""
import time

import numpy as np


def bright_box(threshold=0.75, duplicates=False):
    """One box (class 1) around the pixels whose mean of R, G and B is above
    threshold, scored by their mean brightness. duplicates=True adds the box
    shifted one pixel right (class 1, score x 0.9: NMS removes it), a box far
    away that touches nothing (class 1, score x 0.5: kept) and the first box
    again as class 2 (another class: kept)."""

    def detect(batch):
        assert isinstance(batch, np.ndarray) and batch.dtype == np.float32, type(batch)
        assert batch.ndim == 4 and batch.shape[1] == 3, batch.shape
        assert 0.0 <= batch.min() and batch.max() <= 1.0
        out = []
        for img in batch:
            lum = img.mean(axis=0)
            mask = lum > threshold
            boxes, scores, labels = [], [], []
            if mask.any():
                ys, xs = np.nonzero(mask)
                box = [xs.min(), ys.min(), xs.max() + 1.0, ys.max() + 1.0]
                s = float(lum[mask].mean())
                boxes.append(box)
                scores.append(s)
                labels.append(1)
                if duplicates:
                    boxes += [[box[0] + 1, box[1], box[2] + 1, box[3]], [0, 0, 2, 2], box]
                    scores += [0.9 * s, 0.5 * s, 0.8 * s]
                    labels += [1, 1, 2]
            out.append((np.asarray(boxes, np.float32).reshape(-1, 4),
                        np.asarray(scores, np.float32), np.asarray(labels, np.int64)))
        return out

    return detect


def grid_boxes(h, w, cells):
    """cells x cells boxes tiling an h x w image, row by row."""
    ys = np.linspace(0, h, cells + 1)
    xs = np.linspace(0, w, cells + 1)
    return np.asarray([[xs[j], ys[i], xs[j + 1], ys[i + 1]]
                       for i in range(cells) for j in range(cells)], np.float32)


def grid(cells=4, delay=0.0):
    """cells x cells boxes tiling the image (none overlap: NMS keeps all),
    each scored by its mean brightness and labelled by its brightest channel
    (0 red, 1 green, 2 blue). delay: seconds to sleep before reading the
    pixels (a slow model: the next batch is decoded meanwhile)."""

    def detect(batch):
        assert isinstance(batch, np.ndarray) and batch.dtype == np.float32, type(batch)
        time.sleep(delay)
        n, _, h, w = batch.shape
        boxes = grid_boxes(h, w, cells)
        out = []
        for img in batch:
            means = np.asarray([img[:, int(round(y1)):int(round(y2)),
                                    int(round(x1)):int(round(x2))].reshape(3, -1).mean(axis=1)
                                for x1, y1, x2, y2 in boxes])
            out.append((boxes, means.mean(axis=1), means.argmax(axis=1)))
        return out

    return detect


def torch_grid(cells=4):
    """grid as a torch.nn.Module: [N, 3, H, W] float tensor in, per image
    (boxes, scores, labels) tensors on the input's device out."""
    import torch

    class Grid(torch.nn.Module):
        """The cells' means from a summed-area table: a few kernels a batch
        whatever its size (a model cheaper than the decode, for the
        benchmark in bench/video_infer_checks.sh)."""

        def __init__(self):
            super().__init__()
            self.shapes = {}

        def cells_of(self, h, w, device):
            key = (h, w, str(device))
            if key not in self.shapes:
                boxes = grid_boxes(h, w, cells)
                edges = np.rint(boxes).astype(np.int64)  # the NumPy model's round()
                idx = torch.from_numpy(edges).to(device)
                area = torch.from_numpy(((edges[:, 2] - edges[:, 0]) *
                                         (edges[:, 3] - edges[:, 1])).astype(np.float64))
                self.shapes[key] = (torch.from_numpy(boxes).to(device), idx, area.to(device))
            return self.shapes[key]

        def forward(self, x):
            assert torch.is_tensor(x) and x.ndim == 4, type(x)
            n, _, h, w = x.shape
            boxes, idx, area = self.cells_of(h, w, x.device)
            sat = torch.zeros((n, 3, h + 1, w + 1), dtype=torch.float64, device=x.device)
            sat[:, :, 1:, 1:] = x.double().cumsum(2).cumsum(3)
            x1, y1, x2, y2 = idx[:, 0], idx[:, 1], idx[:, 2], idx[:, 3]
            sums = sat[:, :, y2, x2] - sat[:, :, y1, x2] - sat[:, :, y2, x1] + sat[:, :, y1, x1]
            means = (sums / area).permute(0, 2, 1)  # [N, cells², 3]
            scores, labels = means.mean(dim=2).float(), means.argmax(dim=2)
            return [(boxes, scores[i], labels[i]) for i in range(n)]

    return Grid()
