// SPDX-License-Identifier: Apache-2.0
package qmdb

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// vectorsDir is ../shared/vectors, passed by the test runner in QMDB_VECTORS.
func vectorsDir(t *testing.T) string {
	d := os.Getenv("QMDB_VECTORS")
	if d == "" {
		d = "../../../shared/vectors"
	}
	if _, err := os.Stat(filepath.Join(d, "example.ops")); err != nil {
		t.Fatalf("vectors not found in %s (set QMDB_VECTORS): %v", d, err)
	}
	return d
}

func newDb(t *testing.T) (*Db, string) {
	dir := filepath.Join(t.TempDir(), "db")
	if err := Create(dir, nil); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

type commitRoot struct {
	h    uint64
	root string
}

// applyOps applies an op script through the binding.
func applyOps(t *testing.T, db *Db, path string) []commitRoot {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []commitRoot
	var b *Batch
	var h uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		tok := strings.Fields(line)
		if len(tok) == 0 {
			continue
		}
		hx := func(s string) []byte {
			v, err := hex.DecodeString(s)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		switch tok[0] {
		case "block":
			h, err = strconv.ParseUint(tok[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if b, err = NewBatch(); err != nil {
				t.Fatal(err)
			}
		case "tx":
			err = b.Tx()
		case "put":
			err = b.Put(hx(tok[1]), hx(tok[2]))
		case "del":
			err = b.Delete(hx(tok[1]))
		case "commit":
			var root [HashLen]byte
			root, err = db.Commit(h, b)
			out = append(out, commitRoot{h, hex.EncodeToString(root[:])})
			b.Free()
		default:
			t.Fatalf("bad op line %q", line)
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	return out
}

func TestVectors(t *testing.T) {
	vd := vectorsDir(t)
	db, _ := newDb(t)
	got := applyOps(t, db, filepath.Join(vd, "example.ops"))
	exp, err := os.ReadFile(filepath.Join(vd, "example.expected"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(exp)), "\n")
	if len(got) != len(lines) {
		t.Fatalf("%d commits, expected %d", len(got), len(lines))
	}
	for i, l := range lines {
		want := fmt.Sprintf("%d %s", got[i].h, got[i].root)
		if strings.TrimSpace(l) != want {
			t.Errorf("commit %d: got %q, expected %q", i, want, l)
		}
	}
	v, err := db.Get([]byte("alice"))
	if err != nil || !bytes.Equal(v, []byte{8}) {
		t.Errorf("alice = %x, %v", v, err)
	}
}

func TestProofRoundTrip(t *testing.T) {
	db, _ := newDb(t)
	b, _ := NewBatch()
	defer b.Free()
	for i := 0; i < 100; i++ {
		b.Put([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)))
	}
	root, err := db.Commit(1, b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.Prove([]byte("k42"), Latest)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := VerifyProof(p, root, []byte("k42"), []byte("v42"), 1); err != nil || h != 1 {
		t.Fatalf("valid proof: %d, %v", h, err)
	}
	if _, err := VerifyProof(p, root, []byte("k42"), []byte("v43"), 1); !errors.Is(err, ErrBadProof) {
		t.Fatalf("wrong value: %v", err)
	}
	p[len(p)/2] ^= 1
	if _, err := VerifyProof(p, root, []byte("k42"), []byte("v42"), 1); !errors.Is(err, ErrBadProof) {
		t.Fatalf("tampered proof: %v", err)
	}
	ex, err := db.Prove([]byte("nobody"), Latest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyProof(ex, root, []byte("nobody"), nil, Latest); err != nil {
		t.Fatalf("exclusion: %v", err)
	}
	if info, err := GetProofInfo(ex); err != nil || !info.Absent || info.Height != 1 {
		t.Fatalf("info %+v, %v", info, err)
	}
}

func TestErrors(t *testing.T) {
	db, dir := newDb(t)
	b, _ := NewBatch()
	defer b.Free()
	if err := b.Put(nil, []byte("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty key: %v", err)
	}
	if err := b.Put(bytes.Repeat([]byte("k"), 256), []byte("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("long key: %v", err)
	}
	if _, err := db.Get(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("get empty key: %v", err)
	}
	if _, err := db.Get([]byte("absent")); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent: %v", err)
	}
	b.Put([]byte("a"), []byte("1"))
	if _, err := db.Commit(7, b); !errors.Is(err, ErrBadHeight) {
		t.Errorf("wrong height: %v", err)
	}
	if _, err := db.Root(99); !errors.Is(err, ErrNotFound) {
		t.Errorf("root of a future height: %v", err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("second open: %v", err)
	}
	if err := Create(dir, nil); !errors.Is(err, ErrExists) {
		t.Errorf("create over a database: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none"), nil); !errors.Is(err, ErrNotADatabase) {
		t.Errorf("open nothing: %v", err)
	}
	o := DefaultOptions()
	o.WorkerThreads = 99
	if err := Create(filepath.Join(t.TempDir(), "x"), &o); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad option: %v", err)
	}
	if err := Create("/proc/qmdb-cannot-exist", nil); !errors.Is(err, syscall.ENOENT) &&
		!errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EROFS) {
		t.Errorf("create under /proc: %v (want an errno)", err)
	}
	if _, err := VerifyProof([]byte{1, 2, 3}, [HashLen]byte{}, []byte("k"), nil, Latest); !errors.Is(err, ErrBadProof) {
		t.Errorf("garbage proof: %v", err)
	}
}

func TestClosed(t *testing.T) {
	db, _ := newDb(t)
	b, _ := NewBatch()
	b.Put([]byte("a"), []byte("1"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := db.Get([]byte("a")); err != ErrClosed {
		t.Errorf("get: %v", err)
	}
	if _, err := db.Commit(1, b); err != ErrClosed {
		t.Errorf("commit: %v", err)
	}
	if _, err := db.Height(); err != ErrClosed {
		t.Errorf("height: %v", err)
	}
	if _, err := db.Prove([]byte("a"), Latest); err != ErrClosed {
		t.Errorf("prove: %v", err)
	}
	if _, err := db.GetMany([][]byte{[]byte("a")}); err != ErrClosed {
		t.Errorf("get many: %v", err)
	}
	b.Free()
	if err := b.Put([]byte("a"), []byte("1")); err != ErrClosed {
		t.Errorf("put on a freed batch: %v", err)
	}
}

func TestGetManySubmitConcurrent(t *testing.T) {
	db, _ := newDb(t)
	b, _ := NewBatch()
	defer b.Free()
	for i := 0; i < 300; i++ {
		b.Put([]byte(fmt.Sprintf("k%d", i)), bytes.Repeat([]byte("v"), i+1))
	}
	if _, err := db.Commit(1, b); err != nil {
		t.Fatal(err)
	}
	vals, err := db.GetMany([][]byte{[]byte("k0"), []byte("k299"), []byte("none")})
	if err != nil || !bytes.Equal(vals[0], []byte("v")) || len(vals[1]) != 300 || vals[2] != nil {
		t.Fatalf("GetMany: %q, %v", vals, err)
	}
	// Readers run while blocks are submitted and committed.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad error
	var mu sync.Mutex
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.Get([]byte("k5")); err != nil {
					mu.Lock()
					bad = err
					mu.Unlock()
				}
			}
		}()
	}
	for h := uint64(2); h <= 20; h++ {
		b.Reset()
		b.Put([]byte("k5"), []byte(strconv.FormatUint(h, 10)))
		if err := db.Submit(h, b); err != nil {
			t.Fatal(err)
		}
	}
	root, err := db.Wait(20)
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
	if r2, _ := db.Root(20); err != nil || r2 != root {
		t.Fatalf("wait: %v", err)
	}
	if v, _ := db.GetCommitted([]byte("k5")); string(v) != "20" {
		t.Errorf("k5 = %q", v)
	}
	st, err := db.Stat()
	if err != nil || st.Height != 20 || st.LiveEntries != 300 {
		t.Errorf("stat %+v, %v", st, err)
	}
	if VersionNumber() < 100 || !strings.Contains(Version(), ".") {
		t.Errorf("version %d %q", VersionNumber(), Version())
	}
}

func TestRollback(t *testing.T) {
	db, _ := newDb(t)
	var roots [4][HashLen]byte
	for h := uint64(1); h <= 3; h++ {
		b, _ := NewBatch()
		b.Put([]byte{byte(h)}, []byte("v"))
		r, err := db.Commit(h, b)
		b.Free()
		if err != nil {
			t.Fatal(err)
		}
		roots[h] = r
	}
	if err := db.Rollback(4); !errors.Is(err, ErrBadHeight) {
		t.Errorf("rollback above the latest: %v", err)
	}
	if err := db.Rollback(1); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Root(Latest); err != nil || r != roots[1] {
		t.Errorf("root after the rollback: %x %v", r, err)
	}
	if _, err := db.Get([]byte{3}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a key of a discarded block: %v", err)
	}
}
