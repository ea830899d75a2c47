// SPDX-License-Identifier: Apache-2.0

// State sync (docs/SYNC.md): snapshot export, chunk verification, restore and backup. The
// restore's per-chunk callback comes back into Go through the exported qmdbGoRestoreChunk,
// on the calling goroutine's OS thread; its argument is a C cell holding a cgo.Handle.

package qmdb

/*
#include <qmdb.h>
#include <stdint.h>
#include <stdlib.h>
extern void qmdbGoRestoreChunk(void *arg, char *chunk, int rc, char *why);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// ChunkInfo is what a verified snapshot chunk holds.
type ChunkInfo struct {
	FormatVersion      uint32
	Shard              uint
	Tail               bool   // the chunk holds the shard's youngest twig
	Height             uint64 // the height it is a chunk of
	NextSN, SNStart    uint64 // tail only (else 0)
	TwigBegin, TwigEnd uint64 // the chunk's twigs [TwigBegin, TwigEnd)
	Summaries          uint64 // twigs carried as their left root only
	LogBytes, Entries  uint64
	Live               uint64 // ActiveBits set in the carried twigs
}

// VerifyChunk checks one snapshot chunk (a file written by SnapshotExport) against the trusted
// state root of height. A chunk that does not verify is an error matching ErrBadProof, with
// the reason as Detail.
func VerifyChunk(chunk []byte, root [HashLen]byte, height uint64) (ChunkInfo, error) {
	info := (*C.qmdb_chunk_info)(C.calloc(1, C.sizeof_qmdb_chunk_info))
	defer C.free(unsafe.Pointer(info))
	info.struct_size = C.sizeof_qmdb_chunk_info
	var why *C.char
	rc := C.qmdb_chunk_verify((*C.uint8_t)(bptr(chunk)), C.size_t(len(chunk)),
		(*C.uint8_t)(unsafe.Pointer(&root[0])), C.uint64_t(height), info, &why)
	runtime.KeepAlive(chunk)
	if rc != 0 {
		return ChunkInfo{}, mkerr(rc, goStr(why))
	}
	return ChunkInfo{
		FormatVersion: uint32(info.format_version), Shard: uint(info.shard), Tail: info.tail != 0,
		Height: uint64(info.height), NextSN: uint64(info.next_sn), SNStart: uint64(info.sn_start),
		TwigBegin: uint64(info.twig_begin), TwigEnd: uint64(info.twig_end),
		Summaries: uint64(info.summaries), LogBytes: uint64(info.log_bytes),
		Entries: uint64(info.entries), Live: uint64(info.live),
	}, nil
}

// SnapshotStat is what SnapshotExport wrote or SnapshotRestore did.
type SnapshotStat struct {
	Height   uint64
	Root     [HashLen]byte
	Chunks   uint64 // export: chunks written; restore: chunks in the manifest
	Accepted uint64 // restore: chunks verified and kept (this run and earlier ones)
	Rejected uint64 // restore: chunks rejected in this run
	Missing  uint64 // restore: chunks not (yet) in the input directory
	Bytes    uint64 // chunk bytes written (export) or verified in this run (restore)
	Entries  uint64
	Live     uint64
}

func newCStat() *C.qmdb_snapshot_stat {
	st := (*C.qmdb_snapshot_stat)(C.calloc(1, C.sizeof_qmdb_snapshot_stat))
	st.struct_size = C.sizeof_qmdb_snapshot_stat
	return st
}

func goStat(st *C.qmdb_snapshot_stat) SnapshotStat {
	s := SnapshotStat{
		Height: uint64(st.height), Chunks: uint64(st.chunks), Accepted: uint64(st.accepted),
		Rejected: uint64(st.rejected), Missing: uint64(st.missing), Bytes: uint64(st.bytes),
		Entries: uint64(st.entries), Live: uint64(st.live),
	}
	copy(s.Root[:], C.GoBytes(unsafe.Pointer(&st.root[0]), HashLen))
	return s
}

// SnapshotExport writes a snapshot of the state of height (Latest: the latest) into outdir:
// chunk files of up to twigsPerChunk twigs of one shard (0: the library's default), then the
// MANIFEST. ErrExists if outdir already holds a snapshot.
func (db *Db) SnapshotExport(outdir string, height, twigsPerChunk uint64) (SnapshotStat, error) {
	cdir := C.CString(outdir)
	defer C.free(unsafe.Pointer(cdir))
	st := newCStat()
	defer C.free(unsafe.Pointer(st))
	h, err := db.writer()
	if err != nil {
		return SnapshotStat{}, err
	}
	defer db.doneWriter()
	rc := C.qmdb_snapshot_export(h, cdir, C.uint64_t(height), C.uint64_t(twigsPerChunk), st)
	if rc != 0 {
		return SnapshotStat{}, db.dberr(rc)
	}
	return goStat(st), nil
}

// Backup writes a consistent, openable copy of the committed state into outdir (new, or
// without a database), verified by a full open before it returns. ErrExists if outdir holds a
// database.
func (db *Db) Backup(outdir string) error {
	cdir := C.CString(outdir)
	defer C.free(unsafe.Pointer(cdir))
	h, err := db.writer()
	if err != nil {
		return err
	}
	defer db.doneWriter()
	return db.dberr(C.qmdb_backup(h, cdir))
}

// RestoreFunc receives, for each chunk, its file name and nil (kept) or the reason it was
// rejected (an error matching ErrBadProof).
type RestoreFunc func(chunk string, err error)

type restoreCall struct {
	fn       RestoreFunc
	panicked bool
	panicVal interface{}
}

//export qmdbGoRestoreChunk
func qmdbGoRestoreChunk(arg unsafe.Pointer, chunk *C.char, rc C.int, why *C.char) {
	call := (*(*cgo.Handle)(arg)).Value().(*restoreCall)
	if call.fn == nil || call.panicked {
		return
	}
	name := goStr(chunk)
	err := mkerr(rc, goStr(why))
	// A panic must not unwind through the library's frames: keep it for the caller.
	defer func() {
		if p := recover(); p != nil {
			call.panicked, call.panicVal = true, p
		}
	}()
	call.fn(name, err)
}

// SnapshotRestore restores the snapshot in indir (MANIFEST and chunks) into the new database
// newdir, trusting only root (and height; Latest: the manifest's). Every chunk is verified
// before it is kept; the call may be repeated as more chunks arrive. fn (may be nil) hears of
// every kept and every rejected chunk. nil once the database is built and opens with root;
// ErrNotFound while chunks are missing, ErrBadProof if any was rejected (the good ones stay
// kept), ErrExists if newdir already holds a database. The SnapshotStat is filled in either
// case (Missing, Rejected, ...). A panic in fn is raised again once the library returned.
func SnapshotRestore(newdir, indir string, root [HashLen]byte, height uint64, fn RestoreFunc) (SnapshotStat, error) {
	cnew := C.CString(newdir)
	defer C.free(unsafe.Pointer(cnew))
	cin := C.CString(indir)
	defer C.free(unsafe.Pointer(cin))
	croot := C.CBytes(root[:])
	defer C.free(croot)
	st := newCStat()
	defer C.free(unsafe.Pointer(st))
	call := &restoreCall{fn: fn}
	handle := cgo.NewHandle(call)
	defer handle.Delete()
	cell := (*cgo.Handle)(C.malloc(C.size_t(unsafe.Sizeof(handle))))
	defer C.free(unsafe.Pointer(cell))
	*cell = handle
	// The error detail is per OS thread: read it on the thread that failed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := C.qmdb_snapshot_restore(cnew, cin, (*C.uint8_t)(croot), C.uint64_t(height),
		C.qmdb_restore_fn(C.qmdbGoRestoreChunk), unsafe.Pointer(cell), st)
	var err error
	if rc != 0 {
		err = mkerr(rc, C.GoString(C.qmdb_open_error()))
	}
	if call.panicked {
		panic(call.panicVal)
	}
	return goStat(st), err
}
