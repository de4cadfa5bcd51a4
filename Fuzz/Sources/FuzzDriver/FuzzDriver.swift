import AirPlayFuzzTargets
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's own driver, entered from our `main` (SwiftPM names an executable's entry point
/// itself, so the fuzz executables call the driver rather than let libFuzzer own `main`).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target this process fuzzes (set once, before the driver starts).
nonisolated(unsafe) private var current: FuzzTarget?

/// Runs libFuzzer on the target called `name`, with this process's arguments, and exits.
public func fuzzMain(_ name: String) -> Never {
    guard let target = FuzzTargets.named(name) else {
        print("no fuzz target called \(name)")
        exit(2)
    }
    current = target
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { data, count in
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        current?.body(bytes)
        return 0
    }
    exit(status)
}
