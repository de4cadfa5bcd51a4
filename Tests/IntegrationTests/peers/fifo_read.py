"""What fifo_clock.py and fifo_align.py share: reading receivers' raw PCM FIFOs (S16LE stereo,
44.1 kHz) with the monotonic time each chunk arrived, and when a frame was played."""
import os, select, time


def read_fifos(paths, timeout):
    """Reads every FIFO until each writer has come and gone, or `timeout` seconds pass.
    Returns, per FIFO, the (arrival time, bytes so far) after each read, and the bytes."""
    fds = [os.open(p, os.O_RDONLY | os.O_NONBLOCK) for p in paths]
    chunks = [[] for _ in paths]
    data = [bytearray() for _ in paths]
    done = [False for _ in paths]
    start = time.monotonic()
    while not all(done) and time.monotonic() - start < timeout:
        ready, _, _ = select.select([fd for fd, d in zip(fds, done) if not d], [], [], 0.05)
        for fd in ready:
            i = fds.index(fd)
            block = os.read(fd, 1 << 16)
            if block:
                data[i] += block
                chunks[i].append((time.monotonic(), len(data[i])))
            elif data[i]:
                done[i] = True   # the writer closed after writing
            else:
                time.sleep(0.01)  # no writer yet: a FIFO reads as end-of-file until one opens it
    return chunks, data


def played_at(chunks, frame):
    """When frame `frame` of one output was written: its chunk's arrival, less the frames after it."""
    wanted = (frame + 1) * 4
    for arrival, total in chunks:
        if total >= wanted:
            return arrival - (total - wanted) / 4 / 44100
    return None
