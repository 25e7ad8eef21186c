//! Elastic trace adapters: each reads one format into [`super::job::ElasticJobSpec`]s, ascending
//! by arrival, with errors that name the file and line.
