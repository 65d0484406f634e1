import SurveyExpressions

/// The files a form names, and what the server reads of them. A definition names a file in
/// three ways (`Docs/forms.md`, "Files a form names"):
///
/// - `media` of a node or a choice: an image, audio or video shown with its label;
/// - a `choiceList` named after a CSV file (`"choiceList": "villages.csv"`): the list is that
///   file's rows, read into `choiceLists` under the file's name when the version is published;
/// - `pulldata('villages', 'column', 'key column', key)` in an expression: the file
///   `villages.csv`, kept as `lookupTables` so the server evaluates the call.
///
/// A version is published with exactly the files its form names: one that is named and not sent,
/// or sent and not named, is refused naming it.
public enum FormAttachments {
    /// A file the definition names, and where it names it first.
    public struct Named: Sendable, Equatable {
        public let fileName: String
        public let path: String
    }

    /// What the published definition keeps of a CSV file `pulldata` reads.
    public static let lookupTablesKey = "lookupTables"
    /// The files a draft's form names that are not attached to it yet (ODK Central's drafts take
    /// their files one by one): only a draft's definition has it, and a draft that has it is not
    /// published (`pendingFiles(of:)`).
    public static let pendingFilesKey = "pendingFiles"

    /// The files the draft's definition says are still to be attached, in order.
    public static func pendingFiles(of definition: JSONValue) -> [String] {
        (definition[pendingFilesKey]?.arrayValue ?? []).compactMap(\.stringValue)
    }
    /// The forms of media a label shows: the keys of a `media` object.
    public static let mediaForms: Set<String> = ["image", "big-image", "audio", "video"]

    /// The files of the entity lists a definition declares (`entity.list` + `.csv`, and each of
    /// `entities`'): named by a select as any CSV list is, but served from the list's entities,
    /// never published with a version.
    public static func entityListFiles(of definition: JSONValue) -> Set<String> {
        let declared = [definition["entity"]].compactMap { $0 } + (definition["entities"]?.arrayValue ?? [])
        return Set(declared.compactMap { $0["list"]?.stringValue.map { $0 + ".csv" } })
    }

    /// Every file the definition names, each once, in the order met.
    public static func named(in definition: JSONValue) -> [Named] {
        let served = entityListFiles(of: definition)
        var out: [Named] = []
        var seen: Set<String> = []
        func add(_ name: String, _ path: String) {
            if seen.insert(name).inserted { out.append(Named(fileName: name, path: path)) }
        }
        func media(_ node: [String: JSONValue], _ path: String) {
            guard let media = node["media"]?.objectValue else { return }
            for form in media.keys.sorted() {
                let value = media[form] ?? .null
                if let name = value.stringValue { add(name, "\(path).media.\(form)") }
                for language in (value.objectValue ?? [:]).keys.sorted() {
                    if let name = value[language]?.stringValue { add(name, "\(path).media.\(form).\(language)") }
                }
            }
        }
        func choices(_ list: JSONValue?, _ path: String) {
            for (j, choice) in (list?.arrayValue ?? []).enumerated() {
                if let o = choice.objectValue { media(o, "\(path)[\(j)]") }
            }
        }
        var stack: [(JSONValue, String)] = (definition["questions"]?.arrayValue ?? []).enumerated().reversed()
            .map { ($1, "definition.questions[\($0)]") }
        while let (node, path) = stack.popLast() {
            guard let o = node.objectValue else { continue }
            media(o, path)
            if let list = o["choiceList"]?.stringValue, isCSVName(list), !served.contains(list) { add(list, "\(path).choiceList") }
            choices(o["choices"], "\(path).choices")
            for key in logicKeys {
                // Only pulldata() reads a file: an expression that does not name it is not parsed here.
                guard let source = o[key]?.stringValue, source.contains("pulldata"), let expression = try? Expression(source) else { continue }
                for lookup in expression.lookups { add(lookup.fileName, "\(path).\(key)") }
            }
            stack += (o["children"]?.arrayValue ?? []).enumerated().reversed().map { ($1, "\(path).children[\($0)]") }
        }
        let lists = definition["choiceLists"]?.objectValue ?? [:]
        for name in lists.keys.sorted() { choices(lists[name], "definition.choiceLists.\(name)") }
        return out
    }

    static let logicKeys = ["relevant", "required", "constraint", "readonly", "calculation", "choiceFilter", "repeatCount"]

    /// A list named after a CSV file is read from that file.
    public static func isCSVName(_ name: String) -> Bool {
        name.utf8.count > 4 && name.lowercased().hasSuffix(".csv")
    }

    /// A file's name as a form names it and an app stores it: no directory, no control character.
    public static func isValidFileName(_ name: String) -> Bool {
        guard (1...255).contains(name.utf8.count), name != ".", name != ".." else { return false }
        return !name.unicodeScalars.contains { $0 == "/" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F }
    }

    /// The definition with what its CSV files say read into it: each list named after a file
    /// becomes the file's choices (`name`; `label` or `label::<language>`; every other column
    /// kept for a `choiceFilter`), each file `pulldata` reads becomes a table of
    /// `lookupTables`. What the definition held under those names is replaced: the file is
    /// what the version says. First every named file must have been sent (`sent`) and every
    /// file sent named; `read` gives a sent CSV file's bytes. Throws `ValidationErrors`.
    /// `pendingAllowed` (a draft's): a named file not sent is listed under `pendingFiles`
    /// instead, its list left without choices until it is attached.
    public static func resolve(_ definition: JSONValue, sent: Set<String>, limits: CSVTable.Limits = CSVTable.Limits(),
                               pendingAllowed: Bool = false, read: (String) throws -> [UInt8]) throws -> JSONValue {
        let named = named(in: definition)
        var errors: [FieldError] = []
        let names = Set(named.map(\.fileName))
        let pending = named.map(\.fileName).filter { !sent.contains($0) }
        if !pendingAllowed {
            for n in named where !sent.contains(n.fileName) {
                errors.append(FieldError(path: "attachments.\(n.fileName)", message: "the form names \(n.fileName) (at \(n.path)), which was not sent"))
            }
        }
        for name in sent.sorted() where !names.contains(name) {
            errors.append(FieldError(path: "attachments.\(name)", message: "\(name) was sent, but the form names no such file"))
        }
        guard errors.isEmpty else { throw ValidationErrors(errors) }
        guard var object = definition.objectValue else { return definition }
        let served = entityListFiles(of: definition)
        // Only the server writes it: a definition sent with it claims nothing.
        object[pendingFilesKey] = nil

        var tables: [String: CSVTable] = [:]
        func table(_ name: String) -> CSVTable? {
            if let t = tables[name] { return t }
            do {
                let t = try CSVTable.read(try read(name), limits: limits)
                tables[name] = t
                return t
            } catch let refusal as CSVTable.Refusal {
                errors.append(FieldError(path: "attachments.\(name)", message: "\(name) cannot be read: \(refusal.message)"))
            } catch {
                errors.append(FieldError(path: "attachments.\(name)", message: "\(name) cannot be read"))
            }
            return nil
        }
        var lists = object["choiceLists"]?.objectValue ?? [:]
        var lookups = object[lookupTablesKey]?.objectValue ?? [:]
        var listed: Set<String> = []
        var read: Set<String> = []
        var stack: [JSONValue] = object["questions"]?.arrayValue ?? []
        while let node = stack.popLast() {
            if let name = node["choiceList"]?.stringValue, isCSVName(name), !served.contains(name), sent.contains(name), listed.insert(name).inserted,
               let t = table(name) {
                do { lists[name] = try choices(of: t) } catch {
                    let message = (error as? CSVTable.Refusal)?.message ?? "\(error)"
                    errors.append(FieldError(path: "attachments.\(name)", message: "\(name) cannot be read as choices: \(message)"))
                }
            }
            // A file pulldata reads.
            for key in logicKeys {
                guard let source = node[key]?.stringValue, source.contains("pulldata"), let expression = try? Expression(source) else { continue }
                for lookup in expression.lookups where sent.contains(lookup.fileName) && read.insert(lookup.fileName).inserted {
                    guard let t = table(lookup.fileName) else { continue }
                    lookups[lookup.fileName] = ["columns": .array(t.columns.map { .string($0) }),
                                                "rows": .array(t.rows.map { .array($0.map { .string($0) }) })]
                }
            }
            stack += node["children"]?.arrayValue ?? []
        }
        guard errors.isEmpty else { throw ValidationErrors(errors) }
        if !lists.isEmpty { object["choiceLists"] = .object(lists) }
        if !lookups.isEmpty { object[lookupTablesKey] = .object(lookups) }
        if !pending.isEmpty { object[pendingFilesKey] = .array(pending.map { .string($0) }) }
        return .object(object)
    }

    /// A CSV choice list's rows as choices: `name`, the label (`label`, or `label::<language>`
    /// columns keyed by language, a plain `label` beside them being the language `default` as
    /// in pyxform), every other column as text.
    static func choices(of table: CSVTable) throws -> JSONValue {
        guard let nameColumn = table.columns.firstIndex(of: "name") else {
            throw CSVTable.Refusal(message: "it has no column name; a choice list's file names each choice in a column name (and its label in label)")
        }
        guard !table.rows.isEmpty else { throw CSVTable.Refusal(message: "it has no choices (no row below its header)") }
        // Every other column becomes a key of the choice, and `media` is the key of a choice's
        // media files (an object the definition checks), never a filter column's text.
        guard !table.columns.contains("media") else {
            throw CSVTable.Refusal(message: "its column media would stand for a choice's media files; give that column another name")
        }
        let plainLabel = table.columns.firstIndex(of: "label")
        let languages = table.columns.enumerated().compactMap { i, c -> (Int, String)? in
            c.hasPrefix("label::") && c.count > 7 ? (i, String(c.dropFirst(7))) : nil
        }
        var seen: Set<String> = []
        seen.reserveCapacity(table.rows.count)
        var out: [JSONValue] = []
        out.reserveCapacity(table.rows.count)
        for (r, row) in table.rows.enumerated() {
            // Rows are padded to the header's width when read.
            let name = row.indices.contains(nameColumn) ? row[nameColumn] : ""
            guard !name.isEmpty else { throw CSVTable.Refusal(message: "row \(r + 2) has no name") }
            guard seen.insert(name).inserted else { throw CSVTable.Refusal(message: "row \(r + 2): the choice \(name) is there twice") }
            var choice: [String: JSONValue] = ["name": .string(name)]
            if languages.isEmpty {
                if let plainLabel, row.indices.contains(plainLabel) { choice["label"] = .string(row[plainLabel]) }
            } else {
                var label: [String: JSONValue] = [:]
                for (i, language) in languages where row.indices.contains(i) { label[language] = .string(row[i]) }
                if let plainLabel, row.indices.contains(plainLabel) { label["default"] = .string(row[plainLabel]) }
                choice["label"] = .object(label)
            }
            for (i, column) in table.columns.enumerated() where i != nameColumn && i != plainLabel && !column.hasPrefix("label::") {
                if row.indices.contains(i) { choice[column] = .string(row[i]) }
            }
            out.append(.object(choice))
        }
        return .array(out)
    }
}
