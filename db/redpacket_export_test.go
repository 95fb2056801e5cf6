package db

// Internals of the red packet code that the tests in db_test reach.
var (
	RedPacketFlushQueue    = redPacketFlushQueue
	KeyRedPacketProcessing = keyRedPacketProcessing
	KeyRedPacketClaimed    = keyRedPacketClaimed
	KeyRedPacketMeta       = keyRedPacketMeta
	KeyRedPacketsFlushing  = keyRedPacketsFlushing
	GrabRedPacketScript    = grabRedPacket
	RedPacketKeys          = func(id int64) []string { return redPacketKeys(id)[:4] }
)

// ApplyRedPacketClaims is the flush's apply step for one packet.
var ApplyRedPacketClaims = (*Store).applyRedPacketClaims

// FlushRedPackets is the red packet step of FlushAll, without its lock.
var FlushRedPackets = (*Store).FlushRedPackets
