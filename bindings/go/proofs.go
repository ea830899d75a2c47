// SPDX-License-Identifier: Apache-2.0

// Multi-key proofs and block witnesses (docs/PROOFS.md sections 9 and 10). Every array the C
// library reads holds pointers, so keys, values and the arrays themselves are copied into C
// memory for the call (cgo pointer rules).

package qmdb

/*
#include <qmdb.h>
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// MaxProofKeys is the most keys one multi-key proof may answer.
const MaxProofKeys = int(C.QMDB_MPROOF_MAX_KEYS)

// cKeys copies keys into one C block and builds the pointer and length arrays of the
// multi-key calls. free releases all of it.
type cKeys struct {
	ptrs  *unsafe.Pointer
	lens  *C.size_t
	n     int
	mem   unsafe.Pointer
	table unsafe.Pointer
}

func newCKeys(keys [][]byte) *cKeys {
	n := len(keys)
	total := 1
	for _, k := range keys {
		total += len(k)
	}
	k := &cKeys{n: n}
	slots := n
	if slots == 0 {
		slots = 1
	}
	k.table = C.calloc(C.size_t(slots), C.size_t(unsafe.Sizeof(uintptr(0))+unsafe.Sizeof(C.size_t(0))))
	k.mem = C.malloc(C.size_t(total))
	ptrs := unsafe.Slice((*unsafe.Pointer)(k.table), slots)
	lens := unsafe.Slice((*C.size_t)(unsafe.Add(k.table, slots*int(unsafe.Sizeof(uintptr(0))))), slots)
	mem := unsafe.Slice((*byte)(k.mem), total)
	off := 0
	for i, key := range keys {
		copy(mem[off:], key)
		ptrs[i] = unsafe.Pointer(&mem[off])
		lens[i] = C.size_t(len(key))
		off += len(key)
	}
	k.ptrs, k.lens = &ptrs[0], &lens[0]
	return k
}

func (k *cKeys) free() {
	C.free(k.table)
	C.free(k.mem)
}

// ProveMany builds one proof of the values (or absence) of all keys at height (Latest: the
// latest), writing what the keys share once. Repeats are allowed; 1 to MaxProofKeys keys.
func (db *Db) ProveMany(keys [][]byte, height uint64) ([]byte, error) {
	ck := newCKeys(keys)
	defer ck.free()
	h, err := db.writer()
	if err != nil {
		return nil, err
	}
	defer db.doneWriter()
	var p *C.uint8_t
	var n C.size_t
	rc := C.qmdb_prove_many(h, ck.ptrs, ck.lens, C.size_t(ck.n), C.uint64_t(height), &p, &n)
	if rc != 0 {
		return nil, db.dberr(rc)
	}
	defer C.qmdb_proof_free(p)
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// VerifyProofMany checks, with nothing but the proof, a multi-key proof for keys (the list it
// was built for, in the same order) at height (Latest: the root's height) under the trusted
// root. It returns the proof's height and, per key, its value (nil: absent). A proof that does
// not hold is an error matching ErrBadProof, with the reason as Detail.
func VerifyProofMany(proof []byte, root [HashLen]byte, keys [][]byte, height uint64) (uint64, [][]byte, error) {
	ck := newCKeys(keys)
	defer ck.free()
	// The answers point into the proof: give the library a C copy of it.
	cp := C.malloc(C.size_t(len(proof) + 1))
	defer C.free(cp)
	if len(proof) > 0 {
		C.memcpy(cp, unsafe.Pointer(&proof[0]), C.size_t(len(proof)))
	}
	slots := len(keys)
	if slots == 0 {
		slots = 1
	}
	ans := (*C.qmdb_proof_answer)(C.calloc(C.size_t(slots), C.sizeof_qmdb_proof_answer))
	defer C.free(unsafe.Pointer(ans))
	var proved C.uint64_t
	var why *C.char
	rc := C.qmdb_proof_verify_many((*C.uint8_t)(cp), C.size_t(len(proof)),
		(*C.uint8_t)(unsafe.Pointer(&root[0])), ck.ptrs, ck.lens, C.size_t(ck.n),
		C.uint64_t(height), &proved, ans, &why)
	if rc != 0 {
		return 0, nil, mkerr(rc, goStr(why))
	}
	answers := unsafe.Slice(ans, slots)
	vals := make([][]byte, len(keys))
	for i := range keys {
		if answers[i].present != 0 && answers[i].value != nil {
			vals[i] = C.GoBytes(unsafe.Pointer(answers[i].value), C.int(answers[i].vlen))
		}
	}
	return uint64(proved), vals, nil
}

func goStr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// BlockOp is one operation of a block, for witnesses: transaction Tx (0-based,
// non-decreasing along the block), Key, and Value (nil: delete).
type BlockOp struct {
	Tx    uint32
	Key   []byte
	Value []byte
}

// cOps copies ops (keys and values included) into C memory; nil stays NULL.
func cOps(ops []BlockOp) (*C.qmdb_block_op, func()) {
	if ops == nil {
		return nil, func() {}
	}
	total := 1
	for _, o := range ops {
		total += len(o.Key) + len(o.Value)
	}
	slots := len(ops)
	if slots == 0 {
		slots = 1
	}
	arr := (*C.qmdb_block_op)(C.calloc(C.size_t(slots), C.sizeof_qmdb_block_op))
	mem := C.malloc(C.size_t(total))
	raw := unsafe.Slice(arr, slots)
	buf := unsafe.Slice((*byte)(mem), total)
	off := 0
	for i, o := range ops {
		raw[i].tx = C.uint32_t(o.Tx)
		copy(buf[off:], o.Key)
		raw[i].key = unsafe.Pointer(&buf[off])
		raw[i].klen = C.size_t(len(o.Key))
		off += len(o.Key)
		if o.Value != nil {
			copy(buf[off:], o.Value)
			raw[i].value = unsafe.Pointer(&buf[off])
			raw[i].vlen = C.size_t(len(o.Value))
			off += len(o.Value)
		}
	}
	return arr, func() { C.free(unsafe.Pointer(arr)); C.free(mem) }
}

// Witness builds the witness of committed block height: what a verifier without a database
// needs to compute the block's root from the root of height-1. ops are the block's
// operations as committed; nil builds the witness from the log alone (it then does not cover
// a delete of an absent key, see qmdb_witness).
func (db *Db) Witness(height uint64, ops []BlockOp) ([]byte, error) {
	arr, free := cOps(ops)
	defer free()
	h, err := db.writer()
	if err != nil {
		return nil, err
	}
	defer db.doneWriter()
	var p *C.uint8_t
	var n C.size_t
	if rc := C.qmdb_witness(h, C.uint64_t(height), arr, C.size_t(len(ops)), &p, &n); rc != 0 {
		return nil, db.dberr(rc)
	}
	defer C.qmdb_proof_free(p)
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// CompactionParams are a chain's compaction parameters (fixed when its database was created;
// Stats does not carry them, DefaultOptions gives the defaults).
type CompactionParams struct {
	CompactThres     uint64
	UtilizationRatio uint32
	UtilizationDiv   uint32
}

// VerifyWitness checks the witness of block height against the trusted root of height-1 and
// the block's ops, and returns the block's post-state root. params: the chain's compaction
// parameters, which the witness must state (nil: take the witness's). A witness that does not
// match is an error matching ErrBadProof (ErrInvalid for malformed ops).
func VerifyWitness(witness []byte, preRoot [HashLen]byte, height uint64, ops []BlockOp,
	params *CompactionParams) ([HashLen]byte, error) {
	var post [HashLen]byte
	arr, free := cOps(ops)
	defer free()
	var par *C.qmdb_compaction_params
	if params != nil {
		par = (*C.qmdb_compaction_params)(C.calloc(1, C.sizeof_qmdb_compaction_params))
		defer C.free(unsafe.Pointer(par))
		par.compact_thres = C.uint64_t(params.CompactThres)
		par.utilization_ratio = C.uint32_t(params.UtilizationRatio)
		par.utilization_div = C.uint32_t(params.UtilizationDiv)
	}
	var why *C.char
	rc := C.qmdb_witness_verify((*C.uint8_t)(bptr(witness)), C.size_t(len(witness)),
		(*C.uint8_t)(unsafe.Pointer(&preRoot[0])), C.uint64_t(height), arr, C.size_t(len(ops)),
		par, (*C.uint8_t)(unsafe.Pointer(&post[0])), &why)
	runtime.KeepAlive(witness)
	if rc != 0 {
		return post, mkerr(rc, goStr(why))
	}
	return post, nil
}
