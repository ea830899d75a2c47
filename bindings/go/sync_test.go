// SPDX-License-Identifier: Apache-2.0
package qmdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// twoBlocks commits block 1 (k0..k199) and block 2 (two transactions: updates, inserts, a
// delete); returns the roots of heights 0..2 and block 2's operations.
func twoBlocks(t *testing.T, db *Db) ([][HashLen]byte, []BlockOp) {
	r0, err := db.Root(Latest)
	if err != nil {
		t.Fatal(err)
	}
	roots := [][HashLen]byte{r0}
	b, _ := NewBatch()
	defer b.Free()
	for i := 0; i < 200; i++ {
		b.Put([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)))
	}
	r1, err := db.Commit(1, b)
	if err != nil {
		t.Fatal(err)
	}
	ops := []BlockOp{
		{0, []byte("k3"), []byte("three")},
		{0, []byte("new1"), []byte("n1")},
		{1, []byte("k7"), nil},
		{1, []byte("k3"), []byte("drei")},
		{1, []byte("new2"), []byte("n2")},
	}
	b.Reset()
	tx := uint32(0)
	for _, o := range ops {
		if o.Tx != tx {
			b.Tx()
			tx = o.Tx
		}
		if o.Value == nil {
			b.Delete(o.Key)
		} else {
			b.Put(o.Key, o.Value)
		}
	}
	r2, err := db.Commit(2, b)
	if err != nil {
		t.Fatal(err)
	}
	return append(roots, r1, r2), ops
}

func bs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

func TestMultiKeyProof(t *testing.T) {
	db, _ := newDb(t)
	roots, _ := twoBlocks(t, db)
	keys := bs("k3", "nobody", "k150", "k7", "k3")
	p, err := db.ProveMany(keys, Latest)
	if err != nil {
		t.Fatal(err)
	}
	h, vals, err := VerifyProofMany(p, roots[2], keys, 2)
	if err != nil || h != 2 {
		t.Fatalf("valid proof: %d, %v", h, err)
	}
	want := [][]byte{[]byte("drei"), nil, []byte("v150"), nil, []byte("drei")}
	if !reflect.DeepEqual(vals, want) {
		t.Fatalf("answers %q, expected %q", vals, want)
	}
	if _, vals, err := VerifyProofMany(p, roots[2], keys, Latest); err != nil ||
		!reflect.DeepEqual(vals, want) {
		t.Fatalf("at the root's height: %q, %v", vals, err)
	}
	// Height 1 under the latest root: k3's old value, k7 still present.
	h1, err := db.ProveMany(keys, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, vals, err := VerifyProofMany(h1, roots[2], keys, 1); err != nil ||
		string(vals[0]) != "v3" || string(vals[3]) != "v7" || vals[1] != nil {
		t.Fatalf("historical: %q, %v", vals, err)
	}
	// A flipped byte, another root, another key list.
	bad := append([]byte(nil), p...)
	bad[len(bad)/2] ^= 1
	_, _, err = VerifyProofMany(bad, roots[2], keys, 2)
	var qe *Error
	if !errors.Is(err, ErrBadProof) || !errors.As(err, &qe) || qe.Detail == "" {
		t.Fatalf("flipped byte: %v", err)
	}
	if _, _, err := VerifyProofMany(p, roots[1], keys, Latest); !errors.Is(err, ErrBadProof) {
		t.Fatalf("other root: %v", err)
	}
	if _, _, err := VerifyProofMany(p, roots[2], bs("k3", "nobody", "k151", "k7", "k3"), 2); !errors.Is(err, ErrBadProof) {
		t.Fatalf("other keys: %v", err)
	}
	if _, err := db.ProveMany(nil, Latest); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no keys: %v", err)
	}
	if _, err := db.ProveMany(keys, 9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("above the latest: %v", err)
	}
}

func TestBlockWitness(t *testing.T) {
	db, _ := newDb(t)
	roots, ops := twoBlocks(t, db)
	w, err := db.Witness(2, ops)
	if err != nil {
		t.Fatal(err)
	}
	if post, err := VerifyWitness(w, roots[1], 2, ops, nil); err != nil || post != roots[2] {
		t.Fatalf("valid witness: %x, %v", post, err)
	}
	d := DefaultOptions()
	par := CompactionParams{d.CompactThres, d.UtilizationRatio, d.UtilizationDiv}
	if post, err := VerifyWitness(w, roots[1], 2, ops, &par); err != nil || post != roots[2] {
		t.Fatalf("with the chain's parameters: %x, %v", post, err)
	}
	other := par
	other.CompactThres++
	if _, err := VerifyWitness(w, roots[1], 2, ops, &other); !errors.Is(err, ErrBadProof) {
		t.Fatalf("other parameters: %v", err)
	}
	// From the log alone (the block deletes no absent key).
	wl, err := db.Witness(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if post, err := VerifyWitness(wl, roots[1], 2, ops, nil); err != nil || post != roots[2] {
		t.Fatalf("witness from the log: %x, %v", post, err)
	}
	// A changed value, a dropped operation, a wrong pre-root, a flipped byte.
	changed := append([]BlockOp(nil), ops...)
	changed[1].Value = []byte("other")
	_, err = VerifyWitness(w, roots[1], 2, changed, nil)
	var qe *Error
	if !errors.Is(err, ErrBadProof) || !errors.As(err, &qe) || qe.Detail == "" {
		t.Fatalf("changed op: %v", err)
	}
	if _, err := VerifyWitness(w, roots[1], 2, ops[1:], nil); !errors.Is(err, ErrBadProof) {
		t.Fatalf("dropped op: %v", err)
	}
	if _, err := VerifyWitness(w, roots[0], 2, ops, nil); !errors.Is(err, ErrBadProof) {
		t.Fatalf("wrong pre-root: %v", err)
	}
	bad := append([]byte(nil), w...)
	bad[len(bad)/2] ^= 0x10
	if _, err := VerifyWitness(bad, roots[1], 2, ops, nil); err == nil {
		t.Fatal("flipped byte accepted")
	}
	unordered := append([]BlockOp(nil), ops...)
	unordered[0], unordered[4] = unordered[4], unordered[0]
	if _, err := VerifyWitness(w, roots[1], 2, unordered, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ops out of tx order: %v", err)
	}
	if _, err := db.Witness(3, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("block 3: %v", err)
	}
}

func chunkFiles(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.qmsc"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func TestSnapshotExportRestoreAndChunks(t *testing.T) {
	db, dir := newDb(t)
	roots, _ := twoBlocks(t, db)
	tmp := filepath.Dir(dir)
	snap := filepath.Join(tmp, "snap")
	st, err := db.SnapshotExport(snap, Latest, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := chunkFiles(t, snap)
	if st.Height != 2 || st.Root != roots[2] || st.Chunks == 0 || uint64(len(files)) != st.Chunks {
		t.Fatalf("export %+v, %d files", st, len(files))
	}
	if _, err := db.SnapshotExport(snap, Latest, 0); !errors.Is(err, ErrExists) {
		t.Fatalf("second export: %v", err)
	}

	// Every exported chunk verifies; a flipped byte, another root do not.
	var entries uint64
	for _, f := range files {
		c, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		info, err := VerifyChunk(c, roots[2], 2)
		if err != nil || info.Height != 2 || info.Shard >= 16 || info.TwigBegin >= info.TwigEnd {
			t.Fatalf("%s: %+v, %v", f, info, err)
		}
		entries += info.Entries
	}
	if entries < 200 {
		t.Fatalf("chunks carry %d entries", entries)
	}
	c, _ := os.ReadFile(files[0])
	flipped := append([]byte(nil), c...)
	flipped[len(flipped)/2] ^= 1
	_, err = VerifyChunk(flipped, roots[2], 2)
	var qe *Error
	if !errors.Is(err, ErrBadProof) || !errors.As(err, &qe) || qe.Detail == "" {
		t.Fatalf("flipped chunk: %v", err)
	}
	if _, err := VerifyChunk(c, roots[1], 2); !errors.Is(err, ErrBadProof) {
		t.Fatalf("other root: %v", err)
	}

	// A wrong trusted root is rejected, named through the callback; nothing is built.
	newdir := filepath.Join(tmp, "restored")
	wrong := roots[2]
	wrong[0] ^= 1
	var rejected []string
	_, err = SnapshotRestore(newdir, snap, wrong, Latest, func(chunk string, err error) {
		if !errors.Is(err, ErrBadProof) {
			t.Errorf("%s: %v", chunk, err)
		}
		rejected = append(rejected, chunk)
	})
	if !errors.Is(err, ErrBadProof) || len(rejected) == 0 {
		t.Fatalf("wrong root: %v, rejected %q", err, rejected)
	}
	if _, err := os.Stat(filepath.Join(newdir, "META")); err == nil {
		t.Fatal("a database was built under a wrong root")
	}

	// The trusted root: every chunk is kept, and the database opens with it.
	kept := 0
	rst, err := SnapshotRestore(newdir, snap, roots[2], 2, func(chunk string, err error) {
		if err != nil {
			t.Errorf("%s: %v", chunk, err)
		}
		kept++
	})
	if err != nil || uint64(kept) != st.Chunks || rst.Accepted != st.Chunks ||
		rst.Rejected != 0 || rst.Missing != 0 || rst.Root != roots[2] {
		t.Fatalf("restore %+v, %d kept, %v", rst, kept, err)
	}
	if _, err := SnapshotRestore(newdir, snap, roots[2], Latest, nil); !errors.Is(err, ErrExists) {
		t.Fatalf("restore into a database: %v", err)
	}
	r, err := Open(newdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := r.Root(Latest); got != roots[2] {
		t.Fatalf("restored root %x", got)
	}
	for k, want := range map[string]string{"k3": "drei", "k199": "v199", "new2": "n2"} {
		if v, err := r.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("restored %s = %q, %v", k, v, err)
		}
	}
	if _, err := r.Get([]byte("k7")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("restored k7: %v", err)
	}
	// It goes on with the same roots as the source.
	b, _ := NewBatch()
	defer b.Free()
	b.Put([]byte("after"), []byte("x"))
	ra, err1 := r.Commit(3, b)
	sa, err2 := db.Commit(3, b)
	if err1 != nil || err2 != nil || ra != sa {
		t.Fatalf("block 3: %x %v / %x %v", ra, err1, sa, err2)
	}
}

func TestRestoreResumesAndPanics(t *testing.T) {
	db, dir := newDb(t)
	roots, _ := twoBlocks(t, db)
	tmp := filepath.Dir(dir)
	snap := filepath.Join(tmp, "snap")
	st, err := db.SnapshotExport(snap, Latest, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := chunkFiles(t, snap)
	aside := filepath.Join(tmp, "aside")
	if err := os.Rename(files[0], aside); err != nil {
		t.Fatal(err)
	}
	newdir := filepath.Join(tmp, "restored")
	rst, err := SnapshotRestore(newdir, snap, roots[2], Latest, nil)
	if !errors.Is(err, ErrNotFound) || rst.Missing != 1 || rst.Accepted != st.Chunks-1 {
		t.Fatalf("one chunk missing: %+v, %v", rst, err)
	}
	if err := os.Rename(aside, files[0]); err != nil {
		t.Fatal(err)
	}
	// A panic in the callback reaches the caller (after the library returned).
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "from the callback") {
				t.Fatalf("recovered %v", p)
			}
		}()
		SnapshotRestore(filepath.Join(tmp, "other"), snap, roots[2], Latest,
			func(string, error) { panic("from the callback") })
	}()
	if rst, err := SnapshotRestore(newdir, snap, roots[2], Latest, nil); err != nil ||
		rst.Accepted != st.Chunks {
		t.Fatalf("resumed: %+v, %v", rst, err)
	}
	r, err := Open(newdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := r.Root(Latest); got != roots[2] {
		t.Fatalf("restored root %x", got)
	}
}

func TestBackup(t *testing.T) {
	db, dir := newDb(t)
	roots, _ := twoBlocks(t, db)
	out := filepath.Join(filepath.Dir(dir), "backup")
	if err := db.Backup(out); err != nil {
		t.Fatal(err)
	}
	err := db.Backup(out)
	var qe *Error
	if !errors.Is(err, ErrExists) || !errors.As(err, &qe) || qe.Detail == "" {
		t.Fatalf("second backup: %v", err)
	}
	db.Close()
	if err := db.Backup(out + "2"); err != ErrClosed {
		t.Fatalf("closed: %v", err)
	}
	b, err := Open(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if h, _ := b.Height(); h != 2 {
		t.Fatalf("backup height %d", h)
	}
	if got, _ := b.Root(Latest); got != roots[2] {
		t.Fatalf("backup root %x", got)
	}
	if v, err := b.Get([]byte("k3")); err != nil || !bytes.Equal(v, []byte("drei")) {
		t.Fatalf("backup k3 = %q, %v", v, err)
	}
	if _, err := b.Get([]byte("k7")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("backup k7: %v", err)
	}
}
