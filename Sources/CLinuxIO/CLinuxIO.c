#define _GNU_SOURCE
#include "CLinuxIO.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

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
