extension Expression {
    /// One `${name}` of an expression's source and where it is written.
    public struct ReferenceSpan: Sendable, Equatable {
        public let name: String
        /// Where `${` starts and how long `${name}` is, in Unicode scalars of `source`.
        public let offset: Int
        public let length: Int
    }

    /// Every `${name}` of the source, in order, each time it is written: what a printer needs to
    /// write the expression in another syntax (an XForm's paths) while keeping the rest of the
    /// text — literals, operators, calls, spacing — exactly as it was written.
    public var referenceSpans: [ReferenceSpan] {
        // The source was lexed when the expression was parsed, so lexing it again cannot fail.
        let tokens = (try? Lexer.tokens(Array(source.unicodeScalars))) ?? []
        return tokens.compactMap { token in
            guard case .reference(let name) = token.kind else { return nil }
            return ReferenceSpan(name: name, offset: token.offset, length: token.length)
        }
    }

    /// The functions the expression calls, each once, in order of first call.
    public var calledFunctions: [String] {
        let tokens = (try? Lexer.tokens(Array(source.unicodeScalars))) ?? []
        var out: [String] = []
        for (token, next) in zip(tokens, tokens.dropFirst()) {
            if case .name(let name) = token.kind, next.kind == .openParen, !out.contains(name) { out.append(name) }
        }
        return out
    }
}
