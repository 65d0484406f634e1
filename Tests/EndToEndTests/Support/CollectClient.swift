import Foundation
import FoundationXML
import SurveyDomain

/// A client that speaks OpenRosa the way ODK Collect does: `X-OpenRosa-Version: 1.0` on every
/// request, the form list, the XForm downloaded from its absolute `downloadUrl`, a HEAD on
/// `submission` before sending, then a `multipart/form-data` POST (with `?deviceID=`) of one
/// `xml_submission_file` part (`text/xml`) and one part per file named by its file name — a
/// `*isIncomplete*` part on every POST of a split submission but the last. The instance is
/// written from the form's primary instance, as Collect fills it in.
struct CollectClient {
    let http: RawHTTPClient
    /// `/v1/key/{token}/orgs/{orgId}`
    let base: String
    var deviceID = "collect:Hk3PIUyvEmQ2Lz8b"

    /// `draftOf`: the draft door of that survey (`…/drafts/{surveyId}`).
    init(_ f: Fixture, token: String? = nil, draftOf surveyId: String? = nil) {
        http = f.client
        base = "/v1/key/\(token ?? f.collectorToken)/orgs/\(f.orgId)" + (surveyId.map { "/drafts/\($0)" } ?? "")
    }

    static let headers = ["X-OpenRosa-Version": "1.0"]

    struct ListedForm {
        let formID: String
        let name: String
        let version: String?
        let hash: String
        let downloadURL: String
        /// The form's manifest of files, when it names any.
        var manifestURL: String? = nil
        /// The path of `downloadURL` on this server.
        var downloadPath: String {
            guard let url = URL(string: downloadURL) else { return downloadURL }
            return url.path
        }
    }

    func formList(formID: String? = nil) throws -> (reply: Reply, forms: [ListedForm]) {
        let query = formID.map { "?formID=\($0.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? $0)" } ?? ""
        let reply = try http.request("GET", base + "/formList" + query, headers: Self.headers)
        guard reply.status == 200 else { return (reply, []) }
        let document = try XMLDocument(data: Data(reply.body))
        let forms = (document.rootElement()?.elements(forName: "xform") ?? []).map { x in
            func text(_ name: String) -> String? { x.elements(forName: name).first?.stringValue }
            return ListedForm(formID: text("formID") ?? "", name: text("name") ?? "", version: text("version"), hash: text("hash") ?? "",
                              downloadURL: text("downloadUrl") ?? "", manifestURL: text("manifestUrl"))
        }
        return (reply, forms)
    }

    func download(_ form: ListedForm) throws -> Reply {
        try http.request("GET", form.downloadPath, headers: Self.headers)
    }

    /// The files of a form's manifest, each downloaded from its `downloadUrl` and checked against
    /// its hash, as Collect fetches a form's media: name → bytes.
    func mediaFiles(_ form: ListedForm) throws -> [(name: String, bytes: [UInt8])] {
        guard let manifest = form.manifestURL, let url = URL(string: manifest) else { return [] }
        let reply = try http.request("GET", url.path, headers: Self.headers)
        guard reply.status == 200 else { throw CocoaError(.fileReadUnknown) }
        return try (XMLDocument(data: Data(reply.body)).rootElement()?.elements(forName: "mediaFile") ?? []).map { file in
            func text(_ name: String) -> String { file.elements(forName: name).first?.stringValue ?? "" }
            guard let url = URL(string: text("downloadUrl")) else { throw CocoaError(.fileReadInvalidFileName) }
            let bytes = try http.request("GET", url.path, headers: Self.headers)
            guard bytes.status == 200, text("hash") == "md5:" + Digest.md5Hex(bytes.body) else { throw CocoaError(.fileReadCorruptFile) }
            return (text("filename"), bytes.body)
        }
    }

    /// Collect's HEAD before a submission.
    func probe() throws -> Reply {
        try http.request("HEAD", base + "/submission?deviceID=\(deviceID)", headers: Self.headers)
    }

    struct File {
        let name: String
        let contentType: String
        let bytes: [UInt8]
    }

    func submit(_ instance: [UInt8], files: [File] = [], incomplete: Bool = false, instanceFileName: String = "instance.xml") throws -> Reply {
        let (body, contentType) = Self.multipart(instance, files: files, incomplete: incomplete, instanceFileName: instanceFileName)
        return try http.request("POST", base + "/submission?deviceID=\(deviceID)", body: body,
                                headers: Self.headers.merging(["Content-Type": contentType]) { a, _ in a })
    }

    static func multipart(_ instance: [UInt8], files: [File], incomplete: Bool, instanceFileName: String = "instance.xml") -> ([UInt8], String) {
        let boundary = "----CollectBoundary" + String(UUID().uuidString.prefix(12))
        var body: [UInt8] = []
        func part(_ headers: String, _ bytes: [UInt8]) {
            body += Array("--\(boundary)\r\n\(headers)\r\n\r\n".utf8) + bytes + Array("\r\n".utf8)
        }
        part("Content-Disposition: form-data; name=\"xml_submission_file\"; filename=\"\(instanceFileName)\"\r\nContent-Type: text/xml", instance)
        for f in files {
            part("Content-Disposition: form-data; name=\"\(f.name)\"; filename=\"\(f.name)\"\r\nContent-Type: \(f.contentType)", f.bytes)
        }
        if incomplete { part("Content-Disposition: form-data; name=\"*isIncomplete*\"", Array("yes".utf8)) }
        body += Array("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// The instance of a filled-in form, written from the XForm's primary instance: each repeat in
    /// `repeats` (a path like `members` or `members[2]/children`, 1-based) made that many
    /// instances from its template, each value in `values` (paths like `size`, `group/q`,
    /// `members[2]/age`) set, every other element left as the form had it, and `meta/instanceID`.
    static func instance(of xform: [UInt8], instanceID: String, values: [(String, String)], repeats: [(String, Int)] = []) throws -> [UInt8] {
        let form = try XMLDocument(data: Data(xform))
        guard let primary = try form.nodes(forXPath: "//*[local-name()='model']/*[local-name()='instance'][1]/*").first as? XMLElement,
              let root = primary.copy() as? XMLElement else {
            throw CocoaError(.fileReadCorruptFile)
        }
        let document = XMLDocument(rootElement: root)
        // A repeat's `jr:template` is not part of what Collect sends: dropped where the form has an
        // instance besides it, else it becomes the first instance.
        func dropTemplates(_ e: XMLElement) {
            for child in e.children?.compactMap({ $0 as? XMLElement }) ?? [] {
                if let template = child.attributes?.first(where: { $0.localName == "template" }) {
                    let siblings = e.elements(forName: child.name ?? "")
                    if siblings.count > 1 { child.detach(); continue }
                    child.removeAttribute(forName: template.name ?? "")
                }
                dropTemplates(child)
            }
        }
        dropTemplates(root)
        for (path, count) in repeats {
            let parts = path.split(separator: "/").map(String.init)
            guard let parent = try element(root, parts.dropLast()), let name = parts.last,
                  let template = parent.elements(forName: name).first else { throw CocoaError(.fileReadCorruptFile) }
            let index = parent.children?.firstIndex { $0 === template } ?? 0
            for k in 1..<max(1, count) {
                if let copy = template.copy() as? XMLElement { parent.insertChild(copy, at: index + k) }
            }
            if count == 0 { template.detach() }
        }
        for (path, value) in values {
            guard let e = try element(root, path.split(separator: "/").map(String.init)[...]) else { throw CocoaError(.fileReadCorruptFile) }
            e.stringValue = value
        }
        guard let id = try element(root, ["meta", "instanceID"]) else { throw CocoaError(.fileReadCorruptFile) }
        id.stringValue = instanceID
        return Array(document.xmlData)
    }

    /// The element at `parts` below `root`; `name[n]` is the n-th (1-based) of that name.
    private static func element(_ root: XMLElement, _ parts: ArraySlice<String>) throws -> XMLElement? {
        var e = root
        for part in parts {
            var name = part, n = 1
            if let open = part.firstIndex(of: "["), part.hasSuffix("]") {
                name = String(part[..<open])
                n = Int(part[part.index(after: open)..<part.index(before: part.endIndex)]) ?? 1
            }
            let found = e.children?.compactMap { $0 as? XMLElement }.filter { ($0.localName ?? $0.name) == name } ?? []
            guard found.indices.contains(n - 1) else { return nil }
            e = found[n - 1]
        }
        return e
    }
}
