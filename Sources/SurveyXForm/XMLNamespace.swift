/// The namespace URIs an XForm uses; elements and attributes are matched by URI, never by prefix.
enum XMLNamespace {
    static let xforms = "http://www.w3.org/2002/xforms"
    static let xhtml = "http://www.w3.org/1999/xhtml"
    static let javaRosa = "http://openrosa.org/javarosa"
    static let odk = "http://www.opendatakit.org/xforms"
    static let openRosa = "http://openrosa.org/xforms"
    static let entities = "http://www.opendatakit.org/xforms/entities"
    static let events = "http://www.w3.org/2001/xml-events"
    static let xsd = "http://www.w3.org/2001/XMLSchema"
    /// `xml:space` and the other attributes of the `xml:` prefix, which needs no declaration.
    static let xml = "http://www.w3.org/XML/1998/namespace"
    /// What a definition holds that an XForm has no place for (`surveyd:maxLength`, …), written
    /// by `XFormWriter` so that `XFormReader` reads the same definition back; ODK ignores it.
    static let surveyd = "https://surveyd.dev/xforms"

    /// The prefix pyxform gives a namespace, so that a message names `jr:count` as authors see it.
    static func prefix(of uri: String?) -> String? {
        switch uri {
        case javaRosa: "jr"
        case odk: "odk"
        case openRosa: "orx"
        case entities: "entities"
        case xhtml: "h"
        case events: "ev"
        case surveyd: "surveyd"
        case xml: "xml"
        default: nil
        }
    }
}
