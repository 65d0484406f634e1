/// Where the submission operation looks for what is stored under an id and stores what it
/// accepts: the organization's responses, or a survey draft's test submissions — kept apart, so
/// that no read of the live survey shows or counts them. The checks are the same either way.
public enum SubmissionStore: Sendable, Equatable {
    case live
    /// The test submissions of this survey's draft: the version cited must be the draft, the
    /// instanceID is a key among the draft's submissions only, and the submission creates or
    /// updates no entity, completes no task and is not an event of any webhook.
    case draft(surveyId: String)
}
