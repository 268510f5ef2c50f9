//! DULO with every sequence of one block is its base (FAST'05 s3.4: "when all sequences are
//! random blocks, the algorithm degenerates into the LRU replacement algorithm"): on traces of
//! isolated blocks (none adjacent to another, none at the file's start, re-read at will),
//! the catalog's `dulo` (DULO + Linux read-ahead) makes exactly the misses, fetches and time of
//! its base, `linux-readahead` (the same CLOCK and read-ahead), on unit time and on a disk.
//! The replacement alone is checked block by block in `plan::evict::dulo`.

use proptest::prelude::*;
use sim::catalog::Device;
use sim::choice::parse_choices;
use sim::sweep::Plan;
use sim::TraceFile;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn dulo_without_sequences_is_its_base(
        ids in prop::collection::vec(1u64..400, 1..1500),
        cache in 4usize..120,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("isolated.txt");
        let lines: Vec<String> = ids.iter().map(|id| (id * 2).to_string()).collect();
        std::fs::write(&path, lines.join("\n")).unwrap();
        for device in ["unit:10", "st3500320as:clook"] {
            let plan = Plan {
                traces: vec![TraceFile::new(&path)],
                choices: parse_choices("dulo:bank=64K,evict=128K,linux-readahead").unwrap(),
                capacities: vec![cache],
                devices: vec![device.parse::<Device>().unwrap()],
                realistic: false,
                fetch_spread: 0,
                depth: 1,
            };
            let runs = plan.run(1, &|| {}).unwrap();
            prop_assert_eq!(&runs[0].metrics, &runs[1].metrics, "{}", device);
        }
    }
}
