package verify_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
)

// Every leaf's proof reaches the root, in trees of odd and even sizes; a
// wrong leaf, a wrong sibling or a wrong side does not.
func TestMerkleProofs(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			users := make([]int64, n)
			for i := range users {
				users[i] = int64(n-i) * 7 // out of order: the tree sorts
			}
			tr := verify.EntriesTree(42, users)
			root := tr.RootHex()
			if tr.Len() != n {
				t.Fatalf("%d leaves, want %d", tr.Len(), n)
			}
			for i := range n {
				leaf := tr.Leaf(i)
				if want := verify.EntryLeaf(42, int64(i+1)*7); leaf != want {
					t.Fatalf("leaf %d is not user %d's: leaves go in ascending user ID", i, (i+1)*7)
				}
				lh := hex.EncodeToString(leaf[:])
				proof := tr.Proof(i)
				if !verify.VerifyProof(lh, proof, root) {
					t.Fatalf("leaf %d's proof %v does not reach %s", i, proof, root)
				}
				wrong := verify.EntryLeaf(43, int64(i+1)*7)
				if verify.VerifyProof(hex.EncodeToString(wrong[:]), proof, root) {
					t.Fatalf("another goods' leaf verifies with leaf %d's proof", i)
				}
				if len(proof) > 0 {
					bad := append([]model.ProofStep(nil), proof...)
					bad[0].Side = map[string]string{"left": "right", "right": "left"}[bad[0].Side]
					if bad[0].Hash != lh && verify.VerifyProof(lh, bad, root) {
						t.Fatalf("leaf %d verifies with its first sibling on the wrong side", i)
					}
					bad[0] = model.ProofStep{Hash: root, Side: proof[0].Side}
					if verify.VerifyProof(lh, bad, root) {
						t.Fatalf("leaf %d verifies with a wrong sibling", i)
					}
				}
			}
		})
	}
}

// The tree's rule pinned by hand: one leaf is the root; two are hashed
// together; three pair the last with itself; none is SHA-256 of "".
func TestMerkleRule(t *testing.T) {
	h := func(b ...[32]byte) [32]byte {
		var all []byte
		for _, x := range b {
			all = append(all, x[:]...)
		}
		return sha256.Sum256(all)
	}
	a := sha256.Sum256([]byte("entry:9:1"))
	b := sha256.Sum256([]byte("entry:9:2"))
	c := sha256.Sum256([]byte("entry:9:3"))
	if verify.EntryLeaf(9, 1) != a {
		t.Fatal(`EntryLeaf(9, 1) is not SHA-256("entry:9:1")`)
	}
	for _, tc := range []struct {
		users []int64
		want  [32]byte
	}{
		{nil, sha256.Sum256(nil)},
		{[]int64{1}, a},
		{[]int64{2, 1}, h(a, b)},
		{[]int64{3, 1, 2}, h(h(a, b), h(c, c))},
	} {
		if got := verify.EntriesTree(9, tc.users).Root(); got != tc.want {
			t.Errorf("root of %v = %x, want %x", tc.users, got, tc.want)
		}
	}
	if p := verify.EntriesTree(9, []int64{3, 1, 2}).Proof(2); len(p) != 2 || p[0].Side != "right" || p[0].Hash != hex.EncodeToString(c[:]) {
		t.Fatalf("proof of the odd leaf %+v: its first sibling is itself, on the right", p)
	}
}
