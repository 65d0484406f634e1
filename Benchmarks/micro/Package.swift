// swift-tools-version:6.0
// The domain code a submission runs on the HTTP threads (parse, validation, canonical JSON),
// measured alone. Built by Benchmarks/micro.sh from a copy in which Sources/SurveyDomain,
// SurveyForms, SurveyExpressions and CCrypto are links to the checkout being measured.
import PackageDescription

let package = Package(name: "micro", targets: [
    .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto"),
    .target(name: "SurveyExpressions"),
    .target(name: "SurveyForms", dependencies: ["SurveyExpressions"]),
    .target(name: "SurveyDomain", dependencies: ["CCrypto", "SurveyForms", "SurveyExpressions"]),
    .executableTarget(name: "micro", dependencies: ["SurveyDomain"]),
])
