import Glibc

/// Starts a named OS thread that runs one closure: the playout, a GStreamer bus watcher, a file
/// copier. (Foundation's `Thread` would pull in all of Foundation; the daemon links
/// FoundationEssentials only.)
public enum DedicatedThread {
    /// Runs `body` on a new detached thread named `name` (at most 15 bytes are kept by Linux).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let status = pthread_create(&thread, &attributes, { context in
            let work = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
            LinuxIO.nameThread(work.name)
            work.body()
            return nil
        }, box)
        pthread_attr_destroy(&attributes)
        precondition(status == 0, "pthread_create failed (\(status)): the process is out of threads")
    }
}

private final class ThreadBody: Sendable {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
