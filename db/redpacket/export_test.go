package redpacket

// Internals of the red packet code that the tests in redpacket_test reach.
var (
	FlushQueue    = flushQueue
	ProcessingKey = processingKey
	ClaimedKey    = claimedKey
	MetaKey       = metaKey
	LoadingKey    = loadingKey
	FlushingKey   = flushingKey
	GrabScript    = grabScript
	GrabKeys      = grabKeys
	ApplyClaims   = (*Service).applyClaims
)
