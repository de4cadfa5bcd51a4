import AirPlayHTTP
import AirPlayReceiver

/// The media URL screen `video_refuse_local_urls` uses: name lookups for hosts, and redirects
/// followed with the HTTP client, each hop screened as it connects.
public struct HTTPMediaURLScreen: MediaURLScreen {
    /// Extra certificate authorities for the redirect check (`tls_ca_file`).
    public var caFile: String?

    /// A screen trusting `caFile` beside the system's authorities.
    public init(caFile: String?) {
        self.caFile = caFile
    }

    /// The first loopback, link-local or unspecified address `host` resolves to, if any.
    public func firstLocalAddress(of host: String) -> String? {
        LocalAddressScreen.firstLocalAddress(of: host)
    }

    /// Where `url`'s redirects lead, or nil when that cannot be told.
    public func finalURL(of url: String, headers: [String: String]) throws(MediaURLScreenRefusal) -> String? {
        let options = HTTPRequestOptions(headers: headers, timeout: 10, caFile: caFile, refuseLocalTargets: true)
        do {
            let final = try HTTPClient.resolve(url, options: options).finalURL
            return HTTPClient.isFetchable(final) ? final : nil
        } catch where error.localTargetRefused {
            throw MediaURLScreenRefusal()
        } catch {
            return nil
        }
    }
}
