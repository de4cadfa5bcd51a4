import GStreamerMedia
import Testing

/// What the daemon changes in GStreamer's registry for itself.
@Suite struct GStreamerRuntimeTests {
    /// DirectFB's video sink (installed with plugins-bad, as here) is never chosen by
    /// `autovideosink`: on a headless box it segfaulted the daemon in libfusion's own thread.
    @Test func directFBIsNeverAutoplugged() throws {
        let rank = try #require(GStreamerRuntime.rank(of: "dfbvideosink"), "plugins-bad provides dfbvideosink here")
        #expect(rank == 0)
        #expect(GStreamerRuntime.rank(of: "fakesink") != nil)
    }
}
