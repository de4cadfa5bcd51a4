#define _GNU_SOURCE
#include "CLinuxIO.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>

int clinuxio_receive_batch(int descriptor, void *buffer, size_t slot, unsigned count,
                           struct sockaddr_storage *names, size_t *lengths, int *truncated) {
    struct mmsghdr headers[16];
    struct iovec vectors[16];
    if (count > 16) count = 16;
    memset(headers, 0, sizeof(struct mmsghdr) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = (char *)buffer + i * slot;
        vectors[i].iov_len = slot;
        headers[i].msg_hdr.msg_iov = &vectors[i];
        headers[i].msg_hdr.msg_iovlen = 1;
        headers[i].msg_hdr.msg_name = &names[i];
        headers[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
    }
    int received = recvmmsg(descriptor, headers, count, MSG_DONTWAIT, NULL);
    if (received < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    for (int i = 0; i < received; i++) {
        lengths[i] = headers[i].msg_len;
        truncated[i] = (headers[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
    }
    return received;
}

int clinuxio_eventfd(void) { return eventfd(0, EFD_CLOEXEC); }

void clinuxio_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, 15);
    shortened[15] = 0;
    pthread_setname_np(pthread_self(), shortened);
}

int clinuxio_wait(int wake, int input, long long timeout_ns) {
    struct pollfd watched[2] = {{.fd = wake, .events = POLLIN}, {.fd = input, .events = POLLIN}};
    struct timespec timeout = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
    int ready = ppoll(watched, input >= 0 ? 2 : 1, timeout_ns >= 0 ? &timeout : NULL, NULL);
    if (ready <= 0) return 0;
    int result = 0;
    if (watched[0].revents & POLLIN) {
        uint64_t count;
        (void)!read(wake, &count, sizeof count);
        result |= 1;
    }
    if (input >= 0 && watched[1].revents) result |= 2;
    return result;
}

void clinuxio_signal(int wake) {
    uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);
}

int clinuxio_enable_receive_timestamps(int descriptor) {
    int on = 1;
    return setsockopt(descriptor, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

long clinuxio_receive_timestamped(int descriptor, void *buffer, size_t length, struct sockaddr_storage *name,
                                  long long *realtime_ns) {
    struct iovec vector = { .iov_base = buffer, .iov_len = length };
    char control[CMSG_SPACE(sizeof(struct timespec)) * 2];
    struct msghdr message = {
        .msg_name = name, .msg_namelen = sizeof *name, .msg_iov = &vector, .msg_iovlen = 1,
        .msg_control = control, .msg_controllen = sizeof control,
    };
    ssize_t count = recvmsg(descriptor, &message, MSG_DONTWAIT);
    *realtime_ns = 0;
    if (count < 0) return -1;
    for (struct cmsghdr *item = CMSG_FIRSTHDR(&message); item; item = CMSG_NXTHDR(&message, item)) {
        if (item->cmsg_level == SOL_SOCKET && item->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(item), sizeof stamp);
            *realtime_ns = (long long)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        }
    }
    return (long)count;
}

int clinuxio_enable_transmit_timestamps(int descriptor) {
    int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;
    return setsockopt(descriptor, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags);
}

/// One stamp from the error queue, or 0; -1 when the queue is empty.
static long long read_transmit_stamp(int descriptor) {
    char data[64];
    char control[256];
    struct iovec vector = { .iov_base = data, .iov_len = sizeof data };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
    if (recvmsg(descriptor, &message, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return -1;
    for (struct cmsghdr *item = CMSG_FIRSTHDR(&message); item; item = CMSG_NXTHDR(&message, item)) {
        if (item->cmsg_level == SOL_SOCKET && item->cmsg_type == SCM_TIMESTAMPING) {
            struct scm_timestamping stamps;
            memcpy(&stamps, CMSG_DATA(item), sizeof stamps);
            return (long long)stamps.ts[0].tv_sec * 1000000000LL + stamps.ts[0].tv_nsec;
        }
    }
    return 0;
}

long long clinuxio_transmit_timestamp(int descriptor, int timeout_ms) {
    long long stamp = 0;
    struct pollfd waiting = { .fd = descriptor, .events = 0 };
    for (int round = 0; round < 2; round++) {
        long long next;
        while ((next = read_transmit_stamp(descriptor)) >= 0) {
            if (next > 0) stamp = next;
        }
        if (stamp != 0 || round == 1) break;
        // The error queue signals itself as POLLERR.
        if (poll(&waiting, 1, timeout_ms) <= 0) break;
    }
    return stamp;
}

long clinuxio_getrandom(void *buffer, size_t length) { return (long)getrandom(buffer, length, 0); }
