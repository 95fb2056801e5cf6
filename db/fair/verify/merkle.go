package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/seckill/seckill/db/model"
)

// The raffle's entries root: a SHA-256 Merkle tree over the entries,
// frozen and published when entries close, so the draw cannot add, drop or
// swap an entry unseen, and each shopper can check theirs is in it.
//
//	leaf(user) = SHA-256("entry:" + goods ID + ":" + user ID)   (decimal IDs)
//	leaves     = the entries' leaves in ascending user ID
//	parent     = SHA-256(left || right) over the raw 32-byte digests;
//	             a level's last node without a partner is paired with itself
//	root       = the one node left (a single leaf is the root itself);
//	             no entries: SHA-256 of the empty string
//
// Hex (lowercase) in JSON. A proof is the sibling hashes bottom up, each
// with the side the sibling sits on.

// Merkle is a built tree: every level, the leaves first and the root last.
type Merkle struct {
	levels [][][32]byte
}

// EntryLeaf is the leaf of user's entry in the raffle of goods.
func EntryLeaf(goodsID, userID int64) [32]byte {
	return sha256.Sum256([]byte("entry:" + strconv.FormatInt(goodsID, 10) + ":" + strconv.FormatInt(userID, 10)))
}

// EntriesTree builds the entries tree of the raffle of goods from its
// entrants' user IDs, in any order (sorted here, a copy).
func EntriesTree(goodsID int64, users []int64) *Merkle {
	sorted := slices.Clone(users)
	slices.Sort(sorted)
	leaves := make([][32]byte, len(sorted))
	for i, u := range sorted {
		leaves[i] = EntryLeaf(goodsID, u)
	}
	return NewMerkle(leaves)
}

// NewMerkle builds the tree over leaves, in their order.
func NewMerkle(leaves [][32]byte) *Merkle {
	m := &Merkle{levels: [][][32]byte{leaves}}
	for level := leaves; len(level) > 1; {
		up := make([][32]byte, (len(level)+1)/2)
		for i := range up {
			l := level[2*i]
			r := l // the last node of an odd level is paired with itself
			if 2*i+1 < len(level) {
				r = level[2*i+1]
			}
			up[i] = merkleParent(l, r)
		}
		m.levels = append(m.levels, up)
		level = up
	}
	return m
}

func merkleParent(l, r [32]byte) [32]byte {
	var b [64]byte
	copy(b[:32], l[:])
	copy(b[32:], r[:])
	return sha256.Sum256(b[:])
}

// Root is the tree's root: the single leaf, or SHA-256("") with no leaves.
func (m *Merkle) Root() [32]byte {
	top := m.levels[len(m.levels)-1]
	if len(top) == 0 {
		return sha256.Sum256(nil)
	}
	return top[0]
}

// RootHex is Root in lowercase hex.
func (m *Merkle) RootHex() string {
	r := m.Root()
	return hex.EncodeToString(r[:])
}

// Len is the number of leaves.
func (m *Merkle) Len() int { return len(m.levels[0]) }

// Leaf is the i-th leaf.
func (m *Merkle) Leaf(i int) [32]byte { return m.levels[0][i] }

// Proof is the i-th leaf's path to the root: the sibling at each level,
// bottom up, and the side it sits on (a node paired with itself has itself
// on the right). Empty for a tree of one leaf.
func (m *Merkle) Proof(i int) []model.ProofStep {
	proof := []model.ProofStep{}
	for _, level := range m.levels[:len(m.levels)-1] {
		var sib [32]byte
		side := "right"
		switch {
		case i%2 == 1:
			sib, side = level[i-1], "left"
		case i+1 < len(level):
			sib = level[i+1]
		default:
			sib = level[i]
		}
		proof = append(proof, model.ProofStep{Hash: hex.EncodeToString(sib[:]), Side: side})
		i /= 2
	}
	return proof
}

// VerifyProof reports whether leaf, walked up proof, reaches root (hex
// digests, as published).
func VerifyProof(leaf string, proof []model.ProofStep, root string) bool {
	node, err := hexDigest(leaf)
	if err != nil {
		return false
	}
	for _, st := range proof {
		sib, err := hexDigest(st.Hash)
		if err != nil {
			return false
		}
		switch st.Side {
		case "left":
			node = merkleParent(sib, node)
		case "right":
			node = merkleParent(node, sib)
		default:
			return false
		}
	}
	return hex.EncodeToString(node[:]) == root
}

func hexDigest(s string) ([32]byte, error) {
	var d [32]byte
	b, err := hex.DecodeString(s)
	if err == nil && len(b) != 32 {
		err = hex.ErrLength
	}
	copy(d[:], b)
	return d, err
}
