// SPDX-License-Identifier: Apache-2.0

// Command example tours the Go binding: create, commit a block, read, prove and verify.
//
//	go run ./example /tmp/qmdb-go-example
package main

import (
	"errors"
	"fmt"
	"log"
	"os"

	"qmdb.local/qmdb"
)

func main() {
	dir := "qmdb-go-example"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := qmdb.Create(dir, nil); err != nil {
		log.Fatal(err)
	}
	db, err := qmdb.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	b, err := qmdb.NewBatch()
	if err != nil {
		log.Fatal(err)
	}
	defer b.Free()
	b.Put([]byte("alice"), []byte{0x64})
	b.Put([]byte("bob"), []byte{0x07})
	root, err := db.Commit(1, b)
	if err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("alice"))
	fmt.Printf("height 1 root %x\nalice = %x (%v)\n", root, v, err)
	if _, err := db.Get([]byte("carol")); errors.Is(err, qmdb.ErrNotFound) {
		fmt.Println("carol is absent")
	}
	proof, err := db.Prove([]byte("alice"), qmdb.Latest)
	if err != nil {
		log.Fatal(err)
	}
	// A light client needs only the proof, the trusted root and the claim.
	h, err := qmdb.VerifyProof(proof, root, []byte("alice"), []byte{0x64}, qmdb.Latest)
	fmt.Println("proof verified at height", h, err)
	if _, err := qmdb.VerifyProof(proof, root, []byte("alice"), []byte{0x65}, qmdb.Latest); errors.Is(err, qmdb.ErrBadProof) {
		fmt.Println("a false claim is refused:", err)
	}
}
