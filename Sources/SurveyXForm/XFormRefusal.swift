/// Why an XForm cannot be read into a definition, in words a form's author can act on: the
/// construct is named, and where it is, so it can be changed in the XLSForm and published again.
public struct XFormRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
