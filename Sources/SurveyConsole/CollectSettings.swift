import CZlib
import SurveyDomain

/// The settings ODK Collect (and KoboCollect) read from a QR code when a project is added: JSON
/// with a `general`, an `admin` and a `project` section, compressed with zlib and written in
/// base64 (Collect's settings format). Scanning it points the app at the OpenRosa door with the
/// collector's app token, so a phone is set up without typing a URL.
enum CollectSettings {
    /// The server URL an OpenRosa app uses for `token` (`Docs/odk-collect.md`).
    static func serverURL(origin: String, token: String, orgId: String) -> String {
        "\(origin)/v1/key/\(token)/orgs/\(orgId)"
    }

    /// The settings a field deployment wants: the blank forms kept exactly as published (new
    /// versions downloaded, withdrawn ones removed), finalized forms sent as soon as there is a
    /// network, and the organization's name on the project.
    static func json(serverURL: String, projectName: String) -> JSONValue {
        let icon = projectName.first.map { String($0).uppercased() } ?? "S"
        return [
            "general": ["server_url": .string(serverURL), "form_update_mode": "match_exactly", "autosend": "wifi_and_cellular"],
            "admin": [:],
            "project": ["name": .string(projectName), "icon": .string(icon)],
        ]
    }

    /// What the QR code holds: base64 of the zlib-compressed JSON; nil if zlib fails.
    static func qrText(serverURL: String, projectName: String) -> String? {
        let plain = CanonicalJSON.encode(json(serverURL: serverURL, projectName: projectName))
        var size = compressBound(uLong(plain.count))
        var out = [UInt8](repeating: 0, count: Int(size))
        let status = out.withUnsafeMutableBufferPointer { o in
            plain.withUnsafeBufferPointer { p in compress2(o.baseAddress, &size, p.baseAddress, uLong(p.count), Z_BEST_COMPRESSION) }
        }
        guard status == Z_OK else { return nil }
        return Base64.encode(Array(out.prefix(Int(size))), url: false)
    }
}
