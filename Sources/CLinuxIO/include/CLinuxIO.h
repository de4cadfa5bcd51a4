// Linux socket and thread calls the Swift Glibc module hides (they need _GNU_SOURCE): batched
// datagram reads, eventfd, thread names, time-stamped receives, getrandom. Used by the audio path (UDPDatagramSocket,
// AudioPlayout) and the PTP follower (PTPClockService).
#pragma once
#include <stddef.h>
#include <sys/socket.h>

/// Reads up to `count` (at most 16) datagrams without waiting, datagram i into
/// `buffer + i * slot`, its length into `lengths[i]`, its source into `names[i]` and 1 into
/// `truncated[i]` when it did not fit. Returns how many were read, 0 when none waited, or -1
/// with errno set.
int clinuxio_receive_batch(int descriptor, void *buffer, size_t slot, unsigned count,
                           struct sockaddr_storage *names, size_t *lengths, int *truncated);

/// An eventfd (close-on-exec), or -1 with errno set.
int clinuxio_eventfd(void);

/// Fills `buffer` with `length` bytes from the kernel's random generator (getrandom(2), which
/// Glibc's Swift module does not export). Returns how many were written, or -1 with errno set.
long clinuxio_getrandom(void *buffer, size_t length);

/// Names the calling thread (at most 15 bytes are kept), as `top -H` and perf show it.
void clinuxio_name_thread(const char *name);

/// Waits until `wake` (an eventfd) or `input` (any descriptor, or -1 for none) is readable,
/// or `timeout_ns` nanoseconds pass. A readable `wake` is reset. Returns 1 if woken, 2 if
/// `input` is readable (3 for both), 0 on timeout or interruption.
int clinuxio_wait(int wake, int input, long long timeout_ns);

/// Makes an eventfd readable (wakes a `clinuxio_wait`).
void clinuxio_signal(int wake);

/// Turns on kernel receive time stamps (SO_TIMESTAMPNS) on a datagram socket. Returns 0, or -1 with errno set.
int clinuxio_enable_receive_timestamps(int descriptor);

/// Reads one datagram without waiting into `buffer`, its source into `name`, and the kernel's
/// receive time stamp (CLOCK_REALTIME nanoseconds; 0 when none came) into `realtime_ns`.
/// Returns its length (truncated to `length`), or -1 with errno set (EAGAIN when none waits).
long clinuxio_receive_timestamped(int descriptor, void *buffer, size_t length, struct sockaddr_storage *name,
                                  long long *realtime_ns);

/// Asks the kernel for software transmit time stamps on a datagram socket (SO_TIMESTAMPING
/// with SOF_TIMESTAMPING_TX_SOFTWARE, stamps only). Returns 0, or -1 with errno set.
int clinuxio_enable_transmit_timestamps(int descriptor);

/// Waits up to `timeout_ms` for the transmit time stamp of the datagram just sent and returns
/// it (CLOCK_REALTIME nanoseconds), or 0 when none came. Earlier stamps left in the error queue
/// are read and dropped first.
long long clinuxio_transmit_timestamp(int descriptor, int timeout_ms);
