// The form definition, the JSON it is written in and the check of answers against it live in
// SurveyForms, a module with no server dependency that SurveySync shares; every module of the
// server sees them through SurveyDomain.
@_exported import SurveyForms
