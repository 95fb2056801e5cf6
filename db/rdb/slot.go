package rdb

import "strings"

// ClusterSlots is the number of Redis Cluster hash slots.
const ClusterSlots = 16384

// Slot is the Redis Cluster slot of key: CRC16 of its hash tag (the part
// between the first { and the next }, when not empty) or of the whole key, mod 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % ClusterSlots
}
