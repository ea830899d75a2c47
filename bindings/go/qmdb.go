// SPDX-License-Identifier: Apache-2.0

// Package qmdb is a cgo binding of libqmdb, the Quick Merkle Database: a verifiable key-value
// store that commits a Merkle root over its whole state every block and proves values.
//
// Errors: every error code of the C library is an *Error; compare with errors.Is against
// the sentinels (ErrNotFound, ErrInvalid, ErrBadHeight, ErrBadProof, ...). A negated errno of
// the library is an *Error that unwraps to a syscall.Errno. Calls on a closed Db or a freed
// Batch return ErrClosed.
//
// Goroutines: Get, GetMany, GetCommitted, Height and Root may be called from any number of
// goroutines at once, also while another goroutine commits. The other methods of a Db are
// serialized by the Db itself (one at a time). Close waits for calls in progress. A Batch
// must be used by one goroutine at a time.
package qmdb

/*
#cgo pkg-config: qmdb
#include <qmdb.h>
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// HashLen is the length of a state root.
const HashLen = C.QMDB_HASH_LEN

// Latest selects the latest committed height (Root, Prove, VerifyProof).
const Latest = ^uint64(0)

// Auto lets the library choose an option (WorkerThreads, Pipeline, IOUring).
const Auto = -1

// Indexers.
const (
	IndexerAuto   = uint32(C.QMDB_INDEXER_AUTO)
	IndexerMemory = uint32(C.QMDB_INDEXER_MEMORY)
	IndexerHybrid = uint32(C.QMDB_INDEXER_HYBRID)
)

// Open flags.
const (
	OpenFast        = uint32(C.QMDB_OPEN_FAST)
	OpenNoAutoPrune = uint32(C.QMDB_OPEN_NO_AUTO_PRUNE)
	OpenSetHistory  = uint32(C.QMDB_OPEN_SET_HISTORY)
	OpenReadOnly    = uint32(C.QMDB_OPEN_RDONLY)
	OpenNoPipeline  = uint32(C.QMDB_OPEN_NO_PIPELINE)
	OpenDirectIO    = uint32(C.QMDB_OPEN_DIRECT_IO)
	OpenSalvage     = uint32(C.QMDB_OPEN_SALVAGE)
)

// Error is an error code of libqmdb.
type Error struct {
	Code   int    // the C return code (QMDB_* or a negated errno)
	Detail string // the library's detail message (file, offset), may be empty
}

func (e *Error) Error() string {
	msg := C.GoString(C.qmdb_strerror(C.int(e.Code)))
	if e.Detail != "" {
		return "qmdb: " + msg + ": " + e.Detail
	}
	return "qmdb: " + msg
}

// Is matches errors of the same code, so errors.Is(err, qmdb.ErrNotFound) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap gives the syscall.Errno of a system error.
func (e *Error) Unwrap() error {
	if e.Code < 0 && e.Code > -4096 {
		return syscall.Errno(-e.Code)
	}
	return nil
}

// Sentinels, one per library error code.
var (
	ErrNotFound        = &Error{Code: C.QMDB_NOTFOUND}
	ErrCorrupt         = &Error{Code: C.QMDB_CORRUPT}
	ErrInvalid         = &Error{Code: C.QMDB_INVALID}
	ErrBufferTooSmall  = &Error{Code: C.QMDB_BUFFER_TOO_SMALL}
	ErrExists          = &Error{Code: C.QMDB_EXISTS}
	ErrNotADatabase    = &Error{Code: C.QMDB_NOTADB}
	ErrVersionMismatch = &Error{Code: C.QMDB_VERSION_MISMATCH}
	ErrPanic           = &Error{Code: C.QMDB_PANIC}
	ErrBadHeight       = &Error{Code: C.QMDB_BAD_HEIGHT}
	ErrPruned          = &Error{Code: C.QMDB_PRUNED}
	ErrBadProof        = &Error{Code: C.QMDB_BAD_PROOF}
	ErrTooMany         = &Error{Code: C.QMDB_TOO_MANY}
	ErrBusy            = &Error{Code: C.QMDB_BUSY}
	ErrNoCheckpoint    = &Error{Code: C.QMDB_NO_CHECKPOINT}
)

// ErrClosed is returned by calls on a closed Db or a freed Batch.
var ErrClosed = errors.New("qmdb: use of a closed handle")

func mkerr(rc C.int, detail string) error {
	if rc == 0 {
		return nil
	}
	return &Error{Code: int(rc), Detail: detail}
}

// Version is the loaded library's "major.minor.patch".
func Version() string { return C.GoString(C.qmdb_version()) }

// VersionNumber is MAJOR*10000 + MINOR*100 + PATCH of the loaded library.
func VersionNumber() int { return int(C.qmdb_version_number()) }

// Options of Create and Open. Start from DefaultOptions().
type Options struct {
	CompactThres       uint64 // [create]
	UtilizationRatio   uint32 // [create]
	UtilizationDiv     uint32 // [create]
	EntrySegmentBytes  uint64 // [create]
	TwigSegmentBytes   uint64 // [create]
	HistoryBlocks      uint64
	Flags              uint32 // Open* flags
	ReadQueueDepth     uint32
	Indexer            uint32 // IndexerAuto, IndexerMemory, IndexerHybrid
	WorkerThreads      int32  // Auto, 0 (none) or 1..15
	Pipeline           int32  // Auto, 0 or 1
	IOUring            int32  // Auto, 0 or 1
	HybridMergeChanges uint32 // 0: the library's choice
}

// DefaultOptions returns the library's defaults (qmdb_options_init).
func DefaultOptions() Options {
	var o C.qmdb_options
	C.qmdb_options_init(&o)
	return Options{
		CompactThres: uint64(o.compact_thres), UtilizationRatio: uint32(o.utilization_ratio),
		UtilizationDiv: uint32(o.utilization_div), EntrySegmentBytes: uint64(o.entry_segment_bytes),
		TwigSegmentBytes: uint64(o.twig_segment_bytes), HistoryBlocks: uint64(o.history_blocks),
		Flags: uint32(o.flags), ReadQueueDepth: uint32(o.read_queue_depth), Indexer: uint32(o.indexer),
		WorkerThreads: int32(o.worker_threads), Pipeline: int32(o.pipeline), IOUring: int32(o.io_uring),
		HybridMergeChanges: uint32(o.hybrid_merge_changes),
	}
}

func (opt *Options) c() *C.qmdb_options {
	o := (*C.qmdb_options)(C.calloc(1, C.sizeof_qmdb_options))
	C.qmdb_options_init(o)
	if opt == nil {
		return o
	}
	o.compact_thres = C.uint64_t(opt.CompactThres)
	o.utilization_ratio = C.uint32_t(opt.UtilizationRatio)
	o.utilization_div = C.uint32_t(opt.UtilizationDiv)
	o.entry_segment_bytes = C.uint64_t(opt.EntrySegmentBytes)
	o.twig_segment_bytes = C.uint64_t(opt.TwigSegmentBytes)
	o.history_blocks = C.uint64_t(opt.HistoryBlocks)
	o.flags = C.uint32_t(opt.Flags)
	o.read_queue_depth = C.uint32_t(opt.ReadQueueDepth)
	o.indexer = C.uint32_t(opt.Indexer)
	o.worker_threads = C.int32_t(opt.WorkerThreads)
	o.pipeline = C.int32_t(opt.Pipeline)
	o.io_uring = C.int32_t(opt.IOUring)
	o.hybrid_merge_changes = C.uint32_t(opt.HybridMergeChanges)
	return o
}

// openMu serializes Create/Open: the library's open error detail is per OS thread, and a
// goroutine may move between threads.
var openMu sync.Mutex

// Create makes a database at height 0 in dir. opt may be nil (defaults).
func Create(dir string, opt *Options) error {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	o := opt.c()
	defer C.free(unsafe.Pointer(o))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := C.qmdb_create(cdir, o)
	return mkerr(rc, C.GoString(C.qmdb_open_error()))
}

// Db is an open database.
type Db struct {
	mu sync.RWMutex // write-locked by Close; read-locked by every other call
	wr sync.Mutex   // serializes the calls C allows one at a time
	h  *C.qmdb_db
}

// Open opens the database in dir. opt may be nil (defaults).
func Open(dir string, opt *Options) (*Db, error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	o := opt.c()
	defer C.free(unsafe.Pointer(o))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var h *C.qmdb_db
	if rc := C.qmdb_open(cdir, o, &h); rc != 0 {
		return nil, mkerr(rc, C.GoString(C.qmdb_open_error()))
	}
	db := &Db{h: h}
	runtime.SetFinalizer(db, func(d *Db) { d.Close() })
	return db, nil
}

// Close closes the database; later calls return ErrClosed. A second Close returns nil.
// ErrNoCheckpoint means every block is durable; only the index checkpoint was lost.
func (db *Db) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.h == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := C.qmdb_close(db.h)
	db.h = nil
	runtime.SetFinalizer(db, nil)
	return mkerr(rc, C.GoString(C.qmdb_open_error()))
}

// reader takes the handle for a call that may run concurrently with others.
func (db *Db) reader() (*C.qmdb_db, error) {
	db.mu.RLock()
	if db.h == nil {
		db.mu.RUnlock()
		return nil, ErrClosed
	}
	return db.h, nil
}

// writer takes the handle for a call C wants one at a time.
func (db *Db) writer() (*C.qmdb_db, error) {
	h, err := db.reader()
	if err != nil {
		return nil, err
	}
	db.wr.Lock()
	return h, nil
}

func (db *Db) doneWriter() { db.wr.Unlock(); db.mu.RUnlock() }

// dberr builds the error of a writer call (the detail is read under the writer lock).
func (db *Db) dberr(rc C.int) error {
	if rc == 0 {
		return nil
	}
	return mkerr(rc, C.GoString(C.qmdb_last_error(db.h)))
}

func bptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Height is the latest durable height.
func (db *Db) Height() (uint64, error) {
	h, err := db.reader()
	if err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return uint64(C.qmdb_height(h)), nil
}

// Root is the state root of height (Latest: the latest).
func (db *Db) Root(height uint64) ([HashLen]byte, error) {
	var out [HashLen]byte
	h, err := db.reader()
	if err != nil {
		return out, err
	}
	defer db.mu.RUnlock()
	rc := C.qmdb_root(h, C.uint64_t(height), (*C.uint8_t)(unsafe.Pointer(&out[0])))
	return out, mkerr(rc, "")
}

func (db *Db) get(key []byte, committed bool) ([]byte, error) {
	h, err := db.reader()
	if err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	return getH(h, key, committed)
}

func getH(h *C.qmdb_db, key []byte, committed bool) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		var vlen C.size_t
		var rc C.int
		if committed {
			rc = C.qmdb_get_committed(h, bptr(key), C.size_t(len(key)), bptr(buf),
				C.size_t(len(buf)), &vlen)
		} else {
			rc = C.qmdb_get(h, bptr(key), C.size_t(len(key)), bptr(buf), C.size_t(len(buf)), &vlen)
		}
		switch rc {
		case 0:
			return buf[:vlen], nil
		case C.QMDB_BUFFER_TOO_SMALL:
			buf = make([]byte, int(vlen))
		default:
			return nil, mkerr(rc, "")
		}
	}
}

// Get reads key's value after the latest committed or submitted block. An absent key is
// ErrNotFound.
func (db *Db) Get(key []byte) ([]byte, error) { return db.get(key, false) }

// GetCommitted reads key's value at the latest durable height.
func (db *Db) GetCommitted(key []byte) ([]byte, error) { return db.get(key, true) }

// GetMany reads many keys in one batch of SSD reads. vals[i] is nil where keys[i] is absent.
// The keys and the read descriptors are copied into C memory (cgo pointer rules).
func (db *Db) GetMany(keys [][]byte) ([][]byte, error) {
	const slot = 256
	n := len(keys)
	if n == 0 {
		return nil, nil
	}
	h, err := db.reader()
	if err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	reads := unsafe.Slice((*C.qmdb_read)(C.calloc(C.size_t(n), C.sizeof_qmdb_read)), n)
	defer C.free(unsafe.Pointer(&reads[0]))
	kmem := unsafe.Slice((*byte)(C.malloc(C.size_t(total+1))), total+1)
	defer C.free(unsafe.Pointer(&kmem[0]))
	vmem := unsafe.Slice((*byte)(C.malloc(C.size_t(n*slot))), n*slot)
	defer C.free(unsafe.Pointer(&vmem[0]))
	off := 0
	for i, k := range keys {
		copy(kmem[off:], k)
		reads[i].key = unsafe.Pointer(&kmem[off])
		reads[i].klen = C.size_t(len(k))
		reads[i].buf = unsafe.Pointer(&vmem[i*slot])
		reads[i].cap = slot
		off += len(k)
	}
	if rc := C.qmdb_get_many(h, &reads[0], C.size_t(n)); rc != 0 {
		return nil, mkerr(rc, "")
	}
	vals := make([][]byte, n)
	for i := range reads {
		switch reads[i].rc {
		case 0:
			vals[i] = append([]byte(nil), vmem[i*slot:i*slot+int(reads[i].vlen)]...)
		case C.QMDB_NOTFOUND:
		case C.QMDB_BUFFER_TOO_SMALL:
			v, err := getH(h, keys[i], false)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		default:
			return nil, mkerr(reads[i].rc, "")
		}
	}
	return vals, nil
}

// Commit applies b as block height (Height()+1) and makes it durable; returns the new root.
func (db *Db) Commit(height uint64, b *Batch) ([HashLen]byte, error) {
	var out [HashLen]byte
	if b.h == nil {
		return out, ErrClosed
	}
	h, err := db.writer()
	if err != nil {
		return out, err
	}
	defer db.doneWriter()
	rc := C.qmdb_commit(h, C.uint64_t(height), b.h, (*C.uint8_t)(unsafe.Pointer(&out[0])))
	runtime.KeepAlive(b)
	return out, db.dberr(rc)
}

// Submit applies b as block height and returns once its writes are visible to Get; hashing
// and fsync continue in the background (see Wait).
func (db *Db) Submit(height uint64, b *Batch) error {
	if b.h == nil {
		return ErrClosed
	}
	h, err := db.writer()
	if err != nil {
		return err
	}
	defer db.doneWriter()
	rc := C.qmdb_submit(h, C.uint64_t(height), b.h)
	runtime.KeepAlive(b)
	return db.dberr(rc)
}

// Wait waits until submitted block height is durable and returns its root.
func (db *Db) Wait(height uint64) ([HashLen]byte, error) {
	var out [HashLen]byte
	h, err := db.writer()
	if err != nil {
		return out, err
	}
	defer db.doneWriter()
	rc := C.qmdb_wait(h, C.uint64_t(height), (*C.uint8_t)(unsafe.Pointer(&out[0])))
	return out, db.dberr(rc)
}

// Prune prunes what the history setting allows.
func (db *Db) Prune() error {
	h, err := db.writer()
	if err != nil {
		return err
	}
	defer db.doneWriter()
	return db.dberr(C.qmdb_prune(h))
}

// Rollback rolls the database back to committed block height (a chain reorganization); the
// next block is height+1. ErrBadHeight above the latest, ErrPruned outside the window
// (nothing changed in either case).
func (db *Db) Rollback(height uint64) error {
	h, err := db.writer()
	if err != nil {
		return err
	}
	defer db.doneWriter()
	return db.dberr(C.qmdb_rollback(h, C.uint64_t(height)))
}

// Stats are the main statistics of an open database.
type Stats struct {
	Height, LiveEntries, TotalEntries, UnprunedEntries uint64
	IndexDRAMBytes, TreeDRAMBytes, SSDBytes            uint64
	BlocksCommitted, PrunedTwigs, Compactions          uint64
	Indexer                                            uint32
	Pipeline, IOUring                                  bool
}

// Stat reads the statistics.
func (db *Db) Stat() (Stats, error) {
	h, err := db.writer()
	if err != nil {
		return Stats{}, err
	}
	defer db.doneWriter()
	st := (*C.qmdb_stats)(C.calloc(1, C.sizeof_qmdb_stats))
	defer C.free(unsafe.Pointer(st))
	st.struct_size = C.sizeof_qmdb_stats
	if rc := C.qmdb_stat(h, st); rc != 0 {
		return Stats{}, db.dberr(rc)
	}
	return Stats{
		Height: uint64(st.height), LiveEntries: uint64(st.live_entries),
		TotalEntries: uint64(st.total_entries), UnprunedEntries: uint64(st.unpruned_entries),
		IndexDRAMBytes: uint64(st.index_dram_bytes), TreeDRAMBytes: uint64(st.tree_dram_bytes),
		SSDBytes: uint64(st.ssd_bytes), BlocksCommitted: uint64(st.blocks_committed),
		PrunedTwigs: uint64(st.pruned_twigs), Compactions: uint64(st.compactions),
		Indexer: uint32(st.indexer), Pipeline: st.pipeline != 0, IOUring: st.io_uring != 0,
	}, nil
}

// Prove builds a proof of key's value (or absence) at height (Latest: the latest).
func (db *Db) Prove(key []byte, height uint64) ([]byte, error) {
	h, err := db.writer()
	if err != nil {
		return nil, err
	}
	defer db.doneWriter()
	var p *C.uint8_t
	var n C.size_t
	if rc := C.qmdb_prove(h, bptr(key), C.size_t(len(key)), C.uint64_t(height), &p, &n); rc != 0 {
		return nil, db.dberr(rc)
	}
	defer C.qmdb_proof_free(p)
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// VerifyProof checks, with nothing but the proof, that key has value (nil: is absent) at
// height (Latest: the root's height) under the trusted root. Returns the height the proof
// states, or an error matching ErrBadProof (or ErrInvalid for a malformed claim).
func VerifyProof(proof []byte, root [HashLen]byte, key, value []byte, height uint64) (uint64, error) {
	var proved C.uint64_t
	var why *C.char
	var vp unsafe.Pointer
	if value != nil {
		vp = bptr(value)
		if vp == nil { // an empty, non-nil value: a claim the library refuses
			vp = unsafe.Pointer(&root[0])
		}
	}
	rc := C.qmdb_proof_verify((*C.uint8_t)(bptr(proof)), C.size_t(len(proof)),
		(*C.uint8_t)(unsafe.Pointer(&root[0])), bptr(key), C.size_t(len(key)), vp,
		C.size_t(len(value)), C.uint64_t(height), &proved, &why)
	if rc != 0 {
		detail := ""
		if why != nil {
			detail = C.GoString(why)
		}
		return 0, mkerr(rc, detail)
	}
	return uint64(proved), nil
}

// ProofInfo is what a proof's header says (not verified).
type ProofInfo struct {
	FormatVersion uint32
	Absent        bool
	Deactivated   bool
	Shard         uint
	Height        uint64
}

// GetProofInfo parses a proof's header.
func GetProofInfo(proof []byte) (ProofInfo, error) {
	info := (*C.qmdb_proof_info)(C.calloc(1, C.sizeof_qmdb_proof_info))
	defer C.free(unsafe.Pointer(info))
	info.struct_size = C.sizeof_qmdb_proof_info
	if rc := C.qmdb_proof_info_get((*C.uint8_t)(bptr(proof)), C.size_t(len(proof)), info); rc != 0 {
		return ProofInfo{}, mkerr(rc, "")
	}
	return ProofInfo{FormatVersion: uint32(info.format_version), Absent: info.absent != 0,
		Deactivated: info.deactivated != 0, Shard: uint(info.shard), Height: uint64(info.height)}, nil
}

// Batch is one block's worth of transactions; transaction 0 is open. Not goroutine-safe.
type Batch struct {
	h *C.qmdb_batch
}

// NewBatch creates an empty batch (free it with Free, or leave it to the garbage collector).
func NewBatch() (*Batch, error) {
	b := &Batch{}
	if rc := C.qmdb_batch_new(&b.h); rc != 0 {
		return nil, mkerr(rc, "")
	}
	runtime.SetFinalizer(b, (*Batch).Free)
	return b, nil
}

// Free releases the batch; later calls return ErrClosed.
func (b *Batch) Free() {
	if b.h != nil {
		C.qmdb_batch_free(b.h)
		b.h = nil
		runtime.SetFinalizer(b, nil)
	}
}

// Reset empties the batch for reuse.
func (b *Batch) Reset() error {
	if b.h == nil {
		return ErrClosed
	}
	C.qmdb_batch_reset(b.h)
	return nil
}

// Tx starts the next transaction.
func (b *Batch) Tx() error {
	if b.h == nil {
		return ErrClosed
	}
	return mkerr(C.qmdb_batch_tx(b.h), "")
}

// Put adds put(key, value) to the current transaction (both are copied).
func (b *Batch) Put(key, value []byte) error {
	if b.h == nil {
		return ErrClosed
	}
	return mkerr(C.qmdb_batch_put(b.h, bptr(key), C.size_t(len(key)), bptr(value),
		C.size_t(len(value))), "")
}

// Delete adds delete(key) to the current transaction.
func (b *Batch) Delete(key []byte) error {
	if b.h == nil {
		return ErrClosed
	}
	return mkerr(C.qmdb_batch_del(b.h, bptr(key), C.size_t(len(key))), "")
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int {
	if b.h == nil {
		return 0
	}
	return int(C.qmdb_batch_ops(b.h))
}

// String describes an error code (as qmdb_strerror).
func String(code int) string { return C.GoString(C.qmdb_strerror(C.int(code))) }
