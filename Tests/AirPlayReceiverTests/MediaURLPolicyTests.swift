@testable import AirPlayReceiver
import Testing

/// `video_refuse_local_urls`: the policy asks its screen where a URL leads before the player
/// fetches anything. The daemon's screen does name lookups and follows redirects over HTTP
/// (`HTTPMediaURLScreen`, tried for real in `URLPolicyTests`); here a fixed one stands in.
@Suite struct MediaURLPolicyTests {
    /// A screen with fixed answers: which hosts are local, where URLs lead.
    struct FixedScreen: MediaURLScreen {
        var localHosts: [String: String] = [:]
        var redirects: [String: String] = [:]
        var refused: Set<String> = []

        func firstLocalAddress(of host: String) -> String? { localHosts[host] }
        func finalURL(of url: String, headers: [String: String]) throws(MediaURLScreenRefusal) -> String? {
            if refused.contains(url) { throw MediaURLScreenRefusal() }
            return redirects[url]
        }
    }

    @Test func withoutAScreenAnyHTTPURLWithAHostIsPlayed() throws {
        let policy = MediaURLPolicy(refusingLocalTargetsWith: nil)
        try policy.check("http://127.0.0.1/movie.mp4")
        #expect(try policy.destination(of: "http://127.0.0.1/movie.mp4", headers: [:]) == "http://127.0.0.1/movie.mp4")
        #expect(throws: PlayRequest.Problem.self) { try policy.check("file:///etc/passwd") }
        #expect(throws: PlayRequest.Problem.self) { try policy.check("http:///nohost") }
    }

    @Test func aHostResolvingToTheBoxIsRefusedWithTheAddressInTheReason() {
        let policy = MediaURLPolicy(refusingLocalTargetsWith: FixedScreen(localHosts: ["tv.local": "169.254.3.4"]))
        do {
            try policy.check("http://tv.local/movie.mp4")
            Issue.record("a link-local target was accepted")
        } catch {
            #expect(error.status == 400)
            #expect(error.reason.contains("169.254.3.4"))
        }
    }

    @Test func theProgressivePlayerGetsWhereRedirectsLead() throws {
        let screen = FixedScreen(redirects: ["http://cdn.example/a.mp4": "https://edge.example/a.mp4"])
        let policy = MediaURLPolicy(refusingLocalTargetsWith: screen)
        #expect(try policy.destination(of: "http://cdn.example/a.mp4", headers: [:]) == "https://edge.example/a.mp4")
        // Unknown where it leads: the player tries the URL itself and reports what it finds.
        #expect(try policy.destination(of: "http://gone.example/b.mp4", headers: [:]) == "http://gone.example/b.mp4")
        // Playlists are the gateway's to screen, fetch by fetch.
        let playlist = "http://cdn.example/master.m3u8"
        #expect(try policy.destination(of: playlist, headers: [:]) == playlist)
    }

    @Test func aRedirectToTheBoxIsA400() {
        let policy = MediaURLPolicy(refusingLocalTargetsWith: FixedScreen(refused: ["http://cdn.example/a.mp4"]))
        #expect(throws: PlayRequest.Problem(status: 400,
                                           reason: "http://cdn.example/a.mp4 redirects to a loopback or link-local address; refused by configuration")) {
            try policy.destination(of: "http://cdn.example/a.mp4", headers: [:])
        }
    }
}
