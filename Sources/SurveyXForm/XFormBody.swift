/// The body's controls, groups and repeats by the instance path they name. The primary instance
/// gives the tree its order and nesting (a calculation has no control, yet it has its place);
/// the body gives each node its kind, label and appearance.
struct XFormBody {
    struct Repeat {
        let element: XMLElement
        /// The label of the group pyxform wraps around a repeat (same ref), else the repeat's own.
        let label: XMLElement?
    }

    private(set) var controls: [String: XMLElement] = [:]
    private(set) var groups: [String: XMLElement] = [:]
    private(set) var repeats: [String: Repeat] = [:]
    /// The actions the body holds (in a control: on its value's change; in a repeat: on a new
    /// instance), each with the path of the control or repeat it sits in.
    private(set) var actions: [(action: XMLElement, at: String)] = []

    /// `trigger` is an acknowledge question, `range` a number between bounds.
    private static let questionControls: Set<String> = ["input", "select1", "select", "upload", "trigger", "range"]

    init(_ body: XMLElement) throws(XFormRefusal) {
        try collect(body.children, enclosingGroup: nil)
    }

    /// Recursion is bounded by libxml2's depth limit.
    private mutating func collect(_ elements: [XMLElement], enclosingGroup: (path: String, label: XMLElement?)?) throws(XFormRefusal) {
        for element in elements {
            if XFormActions.isAction(element) {
                actions.append((element, enclosingGroup?.path ?? ""))
                continue
            }
            if element.namespace == XMLNamespace.odk && element.name == "rank" {
                try control(element)
                continue
            }
            guard element.namespace == XMLNamespace.xforms else {
                throw XFormRefusal("the body holds <\(element.displayName)>, which surveyd does not read")
            }
            switch element.name {
            case "label" where enclosingGroup != nil:
                continue // the group's own, read with the group
            case _ where Self.questionControls.contains(element.name):
                try control(element)
            case "group":
                // A group without ref only shows its controls together (a field list, a table);
                // its controls name their nodes, and the XForm keeps it for the devices.
                guard let ref = element.attribute("ref") else {
                    try collect(element.children.filter { !($0.namespace == XMLNamespace.xforms && ["label", "hint"].contains($0.name)) },
                                enclosingGroup: enclosingGroup)
                    continue
                }
                let path = try normalized(ref, of: element)
                guard groups[path] == nil else { throw XFormRefusal("the body has two groups for \(path)") }
                groups[path] = element
                try collect(element.children, enclosingGroup: (path, element.child("label")))
            case "repeat":
                let path = try reference(element, "nodeset")
                guard repeats[path] == nil else { throw XFormRefusal("the body has two repeats for \(path)") }
                let label = enclosingGroup?.path == path ? enclosingGroup?.label : element.child("label")
                repeats[path] = Repeat(element: element, label: label)
                for action in element.children where XFormActions.isAction(action) { actions.append((action, path)) }
                try collect(element.children.filter { $0.name != "label" && !XFormActions.isAction($0) }, enclosingGroup: nil)
            default:
                throw XFormRefusal("the body holds <\(element.displayName)>, which surveyd does not read")
            }
        }
    }

    private mutating func control(_ element: XMLElement) throws(XFormRefusal) {
        let path = try reference(element, "ref")
        guard controls[path] == nil else { throw XFormRefusal("the body has two controls for \(path)") }
        controls[path] = element
        for action in element.children where XFormActions.isAction(action) { actions.append((action, path)) }
    }

    private func reference(_ element: XMLElement, _ attribute: String) throws(XFormRefusal) -> String {
        guard let ref = element.attribute(attribute) else {
            throw XFormRefusal("the body has an <\(element.displayName)> without \(attribute)")
        }
        return try normalized(ref, of: element)
    }

    private func normalized(_ ref: String, of element: XMLElement) throws(XFormRefusal) -> String {
        let path = ref.trimmingWhitespace()
        guard path.hasPrefix("/"), !path.contains("["), !path.contains("//") else {
            throw XFormRefusal("the body's <\(element.displayName)> names \(ref); surveyd reads absolute paths such as /data/name")
        }
        return path
    }
}
