/// The actions an ODK form runs on an event (the ODK XForms specification's "actions"):
/// `setvalue` (a dynamic default, `odk-instance-first-load`; a default in a repeat,
/// `odk-new-repeat`; the `trigger` column, `xforms-value-changed`), `odk:setgeopoint` (a
/// `start-geopoint` question) and `odk:recordaudio` (`background-audio`). The device runs them;
/// the XForm keeps them, served as uploaded. The reader checks that each sets a node of the form
/// and that its value reads as an expression; the node it sets is a question of the definition
/// like any other, whose value is taken as the device sent it.
enum XFormActions {
    static func isAction(_ element: XMLElement) -> Bool {
        switch (element.namespace, element.name) {
        case (XMLNamespace.xforms, "setvalue"), (XMLNamespace.odk, "setgeopoint"), (XMLNamespace.odk, "recordaudio"): true
        default: false
        }
    }

    /// The attributes an action may have; any other is refused by name.
    static func check(_ action: XMLElement) throws(XFormRefusal) {
        for a in action.attributes {
            switch (a.namespace, a.name) {
            case (nil, "ref"), (nil, "value"), (XMLNamespace.events, "event"), (nil, "event"): continue
            case (XMLNamespace.odk, "quality") where action.name == "recordaudio": continue
            default:
                throw XFormRefusal("the action <\(action.displayName) ref=\"\(action.attribute("ref") ?? "")\"> has \(a.displayName)=\"\(a.value)\", which surveyd does not read")
            }
        }
        guard action.children.isEmpty else {
            throw XFormRefusal("the action <\(action.displayName) ref=\"\(action.attribute("ref") ?? "")\"> holds <\(action.children[0].displayName)>, which surveyd does not read")
        }
    }
}
