/// The `airplayd.toml(5)` manual page, written from the key table (`ConfigurationKey.all`) so
/// the page, the error messages and the parser cannot disagree. mdoc, as swift-argument-parser
/// writes the `airplay(1)` and `airplayd(8)` pages beside it.
public enum ConfigurationManual {
    /// The page; `date` as mdoc's `.Dd` takes it (`November 28, 2026`).
    public static func page(date: String) -> String {
        var lines = [
            ".\\\" Generated from airplayd's configuration key table (ConfigurationKey.swift)",
            ".Dd \(date)",
            ".Dt AIRPLAYD.TOML 5",
            ".Os",
            ".Sh NAME",
            ".Nm airplayd.toml",
            ".Nd configuration of the AirPlay receiver airplayd",
            ".Sh SYNOPSIS",
            ".Pa \(ReceiverConfiguration.defaultPath)",
            ".Pp",
            ".Pa /etc/airplayd/ Ns Ar ZONE Ns Pa .toml",
            "for the zone unit",
            ".Sy airplayd@ Ns Ar ZONE",
            ".Sh DESCRIPTION",
            "A TOML file; every key is optional, and command-line flags",
            ".Pq Xr airplayd 8",
            "override it.",
            "It is read strictly: an unknown key, a value of the wrong type or out of range stops",
            ".Nm airplayd",
            "with exit code 78 and a message naming the key.",
            ".Ic systemctl reload airplayd",
            "re-reads it; the keys marked",
            ".Sy reload",
            "take effect at once, a change to any other is logged as needing a restart.",
            ".Sh KEYS",
            ".Bl -tag -width Ds",
        ]
        for key in ConfigurationKey.all {
            lines.append(".It Ic \(key.name)")
            lines.append(escaped(key.allowed.prefix(1).uppercased() + key.allowed.dropFirst()) + ".")
            lines.append(escaped(key.summary))
            if key.appliesOnReload { lines += ["Applies on", ".Sy reload ."] }
        }
        lines += [
            ".El",
            ".Sh FILES",
            ".Bl -tag -width Ds",
            ".It Pa \(ReceiverConfiguration.defaultPath)",
            "the configuration of the single unit",
            ".Sy airplayd.service .",
            ".El",
            ".Sh EXAMPLES",
            ".Bd -literal -offset indent",
            "name = \"Living Room\"",
            "audio_output = \"alsasink device=hw:0\"",
            "video = false",
            ".Ed",
            ".Sh SEE ALSO",
            ".Xr airplay 1 ,",
            ".Xr airplayd 8",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text safe on an mdoc line: a leading dot or quote would start a request, a backslash an escape.
    static func escaped(_ text: String) -> String {
        var safe = text.replacing("\\", with: "\\e")
        if safe.hasPrefix(".") || safe.hasPrefix("'") { safe = "\\&" + safe }
        return safe
    }
}
