// SPDX-License-Identifier: Apache-2.0

// Command bench is the bindings benchmark in Go (see examples/kvbench.c): N puts in blocks of
// 10,000 (one Commit per block), N single Gets, N gets through GetMany in batches of 10,000.
//
//	go run ./bench DIR [N]
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"qmdb.local/qmdb"
)

const block = 10000

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench DIR [N]")
		os.Exit(2)
	}
	n := 100000
	if len(os.Args) > 2 {
		v, err := strconv.Atoi(os.Args[2])
		must(err)
		n = v
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%013d", i))
	}
	val := make([]byte, 32)
	for i := range val {
		val[i] = 0xab
	}
	must(qmdb.Create(os.Args[1], nil))
	db, err := qmdb.Open(os.Args[1], nil)
	must(err)
	defer db.Close()
	b, err := qmdb.NewBatch()
	must(err)
	defer b.Free()

	t0 := time.Now()
	h := uint64(0)
	for i := 0; i < n; i += block {
		must(b.Reset())
		for j := i; j < n && j < i+block; j++ {
			must(b.Put(keys[j], val))
		}
		h++
		_, err := db.Commit(h, b)
		must(err)
	}
	tPut := time.Since(t0).Seconds()

	t0 = time.Now()
	for _, k := range keys {
		_, err := db.Get(k)
		must(err)
	}
	tGet := time.Since(t0).Seconds()

	t0 = time.Now()
	for i := 0; i < n; i += block {
		end := i + block
		if end > n {
			end = n
		}
		vals, err := db.GetMany(keys[i:end])
		must(err)
		for _, v := range vals {
			if v == nil {
				must(fmt.Errorf("a key is missing"))
			}
		}
	}
	tMany := time.Since(t0).Seconds()
	fmt.Printf("lang=go n=%d put_commit_ops_s=%.0f get_ops_s=%.0f get_many_ops_s=%.0f\n", n,
		float64(n)/tPut, float64(n)/tGet, float64(n)/tMany)
}
