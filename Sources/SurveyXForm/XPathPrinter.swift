import SurveyExpressions

/// Writes an expression of a definition as the XPath of an XForm — the inverse of
/// `XPathTranslator`. The expression is parsed by the SurveyExpressions engine and every `${id}`
/// it names becomes the path of that node, with a space either side as pyxform writes it
/// (` /data/household/size `, which the translator drops again); literals, numbers, operators,
/// calls and spacing are copied as written, so the translator reads the same source back.
struct XPathPrinter {
    /// Every node's absolute path (`/data/household/size`) by id.
    let paths: [String: String]
    /// The definition's expressions as parsed already, by source (`SurveyDefinition.expressionsBySource`).
    var parsed: [String: Expression] = [:]

    /// A bind's, or a repeat count's, expression: absolute paths, which ODK resolves inside the
    /// current repeat instance where the node is in it.
    func xpath(_ source: String) throws(XFormWriter.Unwritable) -> String {
        try rewrite(source) { path in path }
    }

    /// A choice filter: the choice's columns stay bare names. Inside a repeat, a path is written
    /// from the question (`current()/../age`), as pyxform does, since an itemset's filter is read
    /// for one repeat instance.
    func choiceFilter(_ source: String, questionPath: String, insideRepeat: Bool) throws(XFormWriter.Unwritable) -> String {
        guard insideRepeat else { return try xpath(source) }
        return try rewrite(source) { Self.relative($0, from: questionPath) }
    }

    /// Functions of surveyd's expressions that ODK Collect's JavaRosa does not have: ODK Validate
    /// refuses a form that calls one ("cannot handle function").
    static let functionsODKLacks: Set<String> = ["floor", "ceiling"]

    private func rewrite(_ source: String, _ path: (String) -> String) throws(XFormWriter.Unwritable) -> String {
        let expression: Expression
        if let known = parsed[source] {
            expression = known
        } else {
            do { expression = try Expression(source) } catch {
                throw XFormWriter.Unwritable("the expression \(source) does not parse: \(error.message)")
            }
        }
        if let lacking = expression.calledFunctions.first(where: Self.functionsODKLacks.contains) {
            throw XFormWriter.Unwritable("the expression \(source) calls \(lacking)(), which ODK Collect does not have")
        }
        let scalars = Array(source.unicodeScalars)
        var out = String.UnicodeScalarView()
        var at = 0
        for span in expression.referenceSpans {
            guard let target = paths[span.name] else {
                throw XFormWriter.Unwritable("the expression \(source) names ${\(span.name)}, which is no node of the definition")
            }
            out.append(contentsOf: scalars[at..<span.offset])
            out.append(contentsOf: (" " + path(target) + " ").unicodeScalars)
            at = span.offset + span.length
        }
        out.append(contentsOf: scalars[at...])
        return String(out)
    }

    /// `target` from the question at `from`: `current()`, up to the nodes' nearest common
    /// ancestor, then down.
    static func relative(_ target: String, from: String) -> String {
        let t = XPathTranslator.components(target), q = XPathTranslator.components(from)
        var common = 0
        while common < min(t.count, q.count - 1), t[common] == q[common] { common += 1 }
        let ups = q.count - common
        let down = t[common...]
        return "current()" + String(repeating: "/..", count: ups) + (down.isEmpty ? "" : "/" + down.joined(separator: "/"))
    }
}
