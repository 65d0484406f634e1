import SurveyForms

/// Reads an ODK XForm (what pyxform writes from an XLSForm, what ODK Collect runs) into a
/// version-2 survey definition (`Docs/forms.md`, "From an XForm"), or refuses it with a message
/// that names the construct surveyd does not carry. Nothing is dropped silently: every control
/// and every bind becomes part of the definition, or the form is refused.
public enum XFormReader {
    /// The definition an XForm maps to, the files it names still to be read into it: a list of
    /// choices from a CSV file is `"choiceList": "villages.csv"`, `pulldata()` is kept, a label's
    /// media is its `media`.
    public static func unresolvedDefinition(from xml: [UInt8]) throws(XFormRefusal) -> JSONValue {
        try read(xml).definition
    }

    /// `unresolvedDefinition`, with what the reader has to say about what the form does beyond the
    /// definition (a submission URL of its own): sentences shown with the version, never a refusal.
    /// `identity`: the form id and version the XForm names (`identity(from:)`), read in the same pass.
    public static func read(_ xml: [UInt8]) throws(XFormRefusal) -> (definition: JSONValue, warnings: [String], identity: (formId: String?, version: String?)) {
        var warnings: [String] = []
        let root = try XMLDocumentReader.parse(xml)
        try refuseEntityConstructs(root)
        guard root.name == "html", root.namespace == XMLNamespace.xhtml else {
            throw XFormRefusal("the document's root is <\(root.displayName)>, not the <h:html> of an XForm")
        }
        guard let head = root.child("head", namespace: XMLNamespace.xhtml), let body = root.child("body", namespace: XMLNamespace.xhtml) else {
            throw XFormRefusal("the XForm lacks <h:head> or <h:body>")
        }
        let title = head.child("title", namespace: XMLNamespace.xhtml)?.value ?? ""
        guard !title.isEmpty else { throw XFormRefusal("the XForm has no <h:title>; a definition needs a title") }
        guard let model = head.child("model") else { throw XFormRefusal("the XForm has no <model>") }

        var itext: XMLElement?
        var instances: [XMLElement] = []
        var binds: [XMLElement] = []
        var actions: [XMLElement] = []
        var encryption: JSONValue?
        for element in model.children {
            switch (element.namespace, element.name) {
            case (XMLNamespace.xforms, "itext"):
                guard itext == nil else { throw XFormRefusal("the model has two itext blocks") }
                itext = element
            case (XMLNamespace.xforms, "instance"): instances.append(element)
            case (XMLNamespace.xforms, "bind"): binds.append(element)
            case _ where XFormActions.isAction(element):
                actions.append(element)
            case (XMLNamespace.xforms, "submission"):
                if let key = element.attribute("base64RsaPublicKey") {
                    // Whitespace inside the key (a long key wrapped in the settings sheet) is no part of it.
                    encryption = ["publicKey": .string(String(key.unicodeScalars.filter { !$0.properties.isWhitespace }))]
                    warnings.append("The form is encrypted (public_key): ODK apps seal each submission with its public key, so surveyd stores what they send — the answers sealed in submission.xml.enc, their files sealed, and the key they are sealed with — exactly once, and checks none of the form's rules. Decrypt them with your private key after export.")
                }
                let action = element.attribute("action")?.trimmingWhitespace() ?? ""
                warnings.append(action.isEmpty
                    ? "The form names its own <submission>; ODK apps follow it, surveyd keeps it in the XForm."
                    : "The form sends its submissions to \(action) (the settings' submission_url): ODK apps send them there, not to this server.")
            default:
                throw XFormRefusal("the model holds <\(element.displayName)>, which surveyd does not read")
            }
        }
        guard let primary = instances.first, primary.attribute("id") == nil, let data = primary.children.first, primary.children.count == 1 else {
            throw XFormRefusal("the XForm's first <instance> is not a primary instance with one root element")
        }
        var definition: [String: JSONValue] = ["title": .string(title)]
        if let formId = data.attribute("id")?.trimmingWhitespace(), !formId.isEmpty { definition["formId"] = .string(formId) }

        let translations = try ItextTranslations(itext)
        var builder = try XFormNodeBuilder(data: data, secondary: Array(instances.dropFirst()), binds: binds,
                                           body: XFormBody(body), translations: translations, modelActions: actions)
        definition["questions"] = .array(try builder.nodes())
        warnings += builder.warnings
        if !builder.choiceLists.isEmpty { definition["choiceLists"] = .object(builder.choiceLists) }
        if let language = translations.defaultLanguage { definition["defaultLanguage"] = .string(language) }
        try readSurveydModel(model, into: &definition, translations: translations)
        if let encryption { definition[EncryptedEnvelope.key] = encryption }
        var entities = try XFormEntities.declarations(data: data, model: model, binds: binds, translator: builder.translator,
                                                      idOf: { builder.id(ofPath: $0) }, warnings: &warnings)
        if entities.count == 1, entities[0]["container"] == nil {
            // What `XFormWriter` wrote of a declaration that did not say it (a version, an id made on first load).
            let unsaid = (model.attribute(Surveyd.absent, namespace: XMLNamespace.surveyd) ?? "").split(separator: " ")
            for property in unsaid where property.hasPrefix("entity.") { entities[0][String(property.dropFirst("entity.".count))] = nil }
            definition["entity"] = .object(entities[0])
        } else if !entities.isEmpty {
            // Several, or one in a group or repeat (Entities 2025.1).
            definition["entities"] = .array(entities.map(JSONValue.object))
        }
        let json = JSONValue.object(definition)
        // A CSV file no question's choices come from is there for pulldata.
        let named = Set(FormAttachments.named(in: json).map(\.fileName))
        for (id, file) in builder.dataFiles.sorted(by: { $0.key < $1.key }) where !named.contains(file) {
            throw XFormRefusal("instance('\(id)') reads \(file), yet no question's choices and no pulldata() read it")
        }
        return (json, warnings, (data.attribute("id"), data.attribute("version")))
    }

    /// An ODK XForm read into a definition: `unresolvedDefinition`, then `check`. A form that
    /// names files (choices from a CSV file, pulldata) is refused here: its files are read into
    /// the definition (`FormAttachments.resolve`) between the two.
    public static func definition(from xml: [UInt8]) throws(XFormRefusal) -> JSONValue {
        let json = try unresolvedDefinition(from: xml)
        try check(json)
        return json
    }

    /// What the reader writes must be a definition surveyd publishes; a rule the reader does not
    /// check itself (an unknown function, a cycle, nesting deeper than 16) is refused here.
    @discardableResult
    public static func check(_ json: JSONValue) throws(XFormRefusal) -> SurveyDefinition {
        do {
            return try SurveyDefinition.parse(json)
        } catch {
            let problems = error.errors.prefix(5).map(\.description).joined(separator: "; ")
            throw XFormRefusal("the XForm reads into a definition that surveyd refuses: \(problems)")
        }
    }

    /// What `XFormWriter` says on `model` of the definition it wrote: the properties the XForm
    /// names that the definition lacks (`surveyd:absent="formId defaultLanguage"`: a form id the
    /// server chose, the first language as the default), and a `defaultLanguage` no text names.
    private static func readSurveydModel(_ model: XMLElement, into definition: inout [String: JSONValue],
                                         translations: ItextTranslations) throws(XFormRefusal) {
        for a in model.attributes where a.namespace == XMLNamespace.surveyd {
            switch a.name {
            case Surveyd.absent:
                for property in a.value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }) {
                    // The entity's are taken away once the entity is read (`unsaidOfEntity`).
                    if property == "entity.id" || property == "entity.specVersion" { continue }
                    guard property == "formId" || property == "defaultLanguage" else {
                        throw XFormRefusal("the model's surveyd:absent names \(property), which surveyd does not read there")
                    }
                    definition[String(property)] = nil
                }
            case "defaultLanguage":
                guard translations.languages.isEmpty else {
                    throw XFormRefusal("the model has surveyd:defaultLanguage and itext translations; the default language is the one marked default=\"true()\"")
                }
                definition["defaultLanguage"] = .string(a.value)
            default:
                throw XFormRefusal("the model has \(a.displayName)=\"\(a.value)\", which surveyd does not read")
            }
        }
    }

    /// The form id and version an XForm names: its primary instance root's `id` and `version`
    /// (nil when it has none), as an ODK server lists the form.
    public static func identity(from xml: [UInt8]) throws(XFormRefusal) -> (formId: String?, version: String?) {
        let root = try XMLDocumentReader.parse(xml)
        guard let model = root.child("head", namespace: XMLNamespace.xhtml)?.child("model"),
              let primary = model.children("instance").first, let data = primary.children.first else {
            throw XFormRefusal("the XForm has no primary instance")
        }
        return (data.attribute("id"), data.attribute("version"))
    }

    /// The entities namespace names two attributes surveyd reads (`XFormEntities`): the model's
    /// `entities-version` and a bind's `saveto`; anything else in it is refused by name.
    /// Iterative, with an explicit stack.
    private static func refuseEntityConstructs(_ root: XMLElement) throws(XFormRefusal) {
        var stack = [root]
        while let element = stack.popLast() {
            if element.namespace == XMLNamespace.entities {
                throw XFormRefusal("the form has <\(element.displayName)>, which surveyd does not read")
            }
            for a in element.attributes where a.namespace == XMLNamespace.entities {
                let read = (element.name == "model" && a.name == "entities-version") || (element.name == "bind" && a.name == "saveto")
                if !read { throw XFormRefusal("the form has \(a.displayName) on <\(element.displayName)>, which surveyd does not read") }
            }
            stack += element.children
        }
    }
}
