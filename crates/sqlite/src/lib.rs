//! libprefetch for SQLite (paper section 5.4): a TPC-C-like data generator, a bounds-checked reader of the
//! SQLite b-tree file format, and a loadable extension whose VFS hands libprefetch the table pages an index
//! scan is about to read.
//!
//! Built as `libprefetch_sqlite.so` (crate-type cdylib) the crate is the extension: `.load` it into any
//! SQLite (see [`ext`]). As an rlib it provides the generator and the reader (the benchmark, `prefetch bench sqlite`, is in crate
//! `bench`, so the extension links no benchmark code).

pub mod api;
pub mod btree;
pub mod connection;
pub mod ext;
pub mod feed;
pub mod format;
mod gate;
pub mod gen;
pub mod scan;
pub mod statement;
pub mod vfs;
