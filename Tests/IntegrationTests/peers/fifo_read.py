"""What fifo_clock.py and fifo_align.py share: reading receivers' raw PCM FIFOs (stereo, S16LE
at 44.1 kHz unless `--pcm s24le/48000` says otherwise) with the monotonic time each chunk
arrived, and when a frame was played."""
import os, select, time

# Bytes per stereo frame and frames per second of the outputs read (set by `options`).
FRAME_BYTES, RATE = 4, 44100


def options(argv):
    """Takes `--pcm FORMAT/RATE` (s16le or s24le) and `--save PATH` off the front of argv;
    returns (the remaining arguments, the save path or None). Sets FRAME_BYTES and RATE."""
    global FRAME_BYTES, RATE
    save = None
    while argv and argv[0] in ("--pcm", "--save"):
        if argv[0] == "--pcm":
            kind, rate = argv[1].split("/")
            FRAME_BYTES, RATE = {"s16le": 4, "s24le": 6}[kind], int(rate)
        else:
            save = argv[1]
        argv = argv[2:]
    return argv, save


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
    wanted = (frame + 1) * FRAME_BYTES
    for arrival, total in chunks:
        if total >= wanted:
            return arrival - (total - wanted) / FRAME_BYTES / RATE
    return None


def written_at(chunks, frame):
    """When a raw output wrote frame `frame` (S16LE stereo, 44.1 kHz): its chunk arrived then,
    and the output writes a chunk's first frame when it is due, the rest after it in order."""
    wanted, before = frame * 4, 0
    for arrival, total in chunks:
        if total > wanted:
            return arrival + (wanted - before) / 4 / 44100
        before = total
    return None


def errors_against_promise(chunks, base, frames, first_heard):
    """Per whole second of a stream of `frames` frames found at frame `base` of the output, the
    median (over 50 frames) of when they were written less when promised: stream frame f at
    `first_heard + f / 44100` (monotonic seconds). In milliseconds."""
    errors = []
    for second in range(frames // 44100):
        found = sorted(at - (first_heard + f / 44100) for f in range(second * 44100, min((second + 1) * 44100, frames), 44100 // 50)
                       if (at := written_at(chunks, base + f)) is not None)
        if found:
            errors.append(round(found[len(found) // 2] * 1000, 2))
    return errors

