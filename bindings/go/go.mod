module qmdb.local/qmdb

go 1.19
