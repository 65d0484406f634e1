// All logic lives in CLI.swift: closures written here would be main-actor isolated and trap when
// a server thread calls them.
CLI.main(Array(CommandLine.arguments.dropFirst()))
