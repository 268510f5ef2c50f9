//! libprefetch for SQLite (paper section 5.4): a TPC-C-like data generator, a bounds-checked reader of the
//! SQLite b-tree file format, and a loadable extension whose VFS hands libprefetch the table pages an index
//! scan is about to read.

pub mod btree;
pub mod format;
pub mod gen;
pub mod scan;
