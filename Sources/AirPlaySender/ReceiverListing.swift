import AirPlayWire
import Foundation

/// Formats receivers for `airplay list`: aligned text lines, or a JSON array.
public enum ReceiverListing {
    /// One line per receiver: name, address:port, model, abilities and requirements; `paired`
    /// holds the device ids this sender has credentials for.
    public static func text(_ receivers: [DiscoveredReceiver], paired: Set<String> = []) -> String {
        let rows = receivers.map { receiver -> [String] in
            let endpoint = receiver.address.map { Self.endpoint($0, receiver.port) } ?? "?:\(receiver.port)"
            var what = receiver.abilities.joined(separator: ", ")
            var requirements = receiver.requirements
            if let id = receiver.deviceID?.colonForm, paired.contains(id) {
                requirements = requirements.filter { $0 != "pairing required" } + ["paired"]
            }
            if !requirements.isEmpty { what += "; " + requirements.joined(separator: ", ") }
            return [receiver.name, endpoint, receiver.model ?? "unknown model", what]
        }
        guard !rows.isEmpty else { return "" }
        let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            (0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                + "  " + row[3]
        }.joined(separator: "\n") + "\n"
    }

    /// The JSON form: an array of objects with the decoded features.
    public static func json(_ receivers: [DiscoveredReceiver], paired: Set<String> = []) -> String {
        let objects: [[String: Any]] = receivers.map { receiver in
            var object: [String: Any] = [
                "name": receiver.name,
                "port": Int(receiver.port),
                "video": receiver.supportsVideo,
                "audio": receiver.supportsAudio,
                "photo": receiver.supportsPhoto,
                "passwordRequired": receiver.passwordRequired,
                "pairingRequired": receiver.pairingRequired,
                "paired": receiver.deviceID.map { paired.contains($0.colonForm) } ?? false,
                "features": [
                    "value": receiver.features.txtValue,
                    "bits": receiver.features.bitNumbers,
                    "names": receiver.features.names,
                ] as [String: Any],
                "services": receiver.services.map { service -> [String: Any] in
                    [
                        "type": service.kind.rawValue,
                        "name": service.instanceName,
                        "host": service.hostName,
                        "addresses": service.addresses,
                        "port": Int(service.port),
                        "txt": Dictionary(service.record.txt.entries.map { ($0.key, $0.value) },
                                          uniquingKeysWith: { first, _ in first }),
                    ]
                },
            ]
            object["deviceId"] = receiver.deviceID?.colonForm ?? NSNull()
            object["model"] = receiver.model ?? NSNull()
            object["address"] = receiver.address ?? NSNull()
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    private static func endpoint(_ address: String, _ port: UInt16) -> String {
        address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}
