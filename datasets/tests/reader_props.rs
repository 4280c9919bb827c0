//! Property tests over the trace line parsers: arbitrary bytes (and
//! near-valid rows) fed to every table reader, the usage-pool reader, the
//! plain-series reader and `load_series` never panic; strict readers either
//! return rows or an error naming the input, lenient ones skip bad rows.

use datasets::alibaba2018::{ContainerMeta, ContainerUsage, MachineMeta};
use datasets::bitbrains::VmSample;
use datasets::google2011::reader::{JobEvent, MachineEvent, TaskEvent, TaskUsage};
use datasets::google2019::InstanceUsage;
use datasets::{Table, TableReader};
use proptest::prelude::*;

fn drain<T: Table>(bytes: &[u8], lenient: bool) -> Result<(), TestCaseError> {
    let mut r =
        TableReader::<T>::from_reader("input.csv", std::io::Cursor::new(bytes.to_vec()), lenient)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    // a reader that reports an error may continue; bound the loop by the
    // input size so a reader that never ends would fail the test
    for _ in 0..=bytes.len() + 1 {
        match r.next_row() {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(()),
            Err(e) => {
                prop_assert!(!lenient || e.to_string().contains("input.csv"), "{e}");
                prop_assert!(e.to_string().contains("input.csv"), "{e}");
            }
        }
    }
    Ok(())
}

fn all_tables(bytes: &[u8]) -> Result<(), TestCaseError> {
    for lenient in [false, true] {
        drain::<TaskEvent>(bytes, lenient)?;
        drain::<JobEvent>(bytes, lenient)?;
        drain::<MachineEvent>(bytes, lenient)?;
        drain::<TaskUsage>(bytes, lenient)?;
        drain::<InstanceUsage>(bytes, lenient)?;
        drain::<ContainerUsage>(bytes, lenient)?;
        drain::<ContainerMeta>(bytes, lenient)?;
        drain::<MachineMeta>(bytes, lenient)?;
        drain::<VmSample>(bytes, lenient)?;
    }
    let _ = datasets::pool::UsagePool::read("pool.txt", bytes);
    let _ = datasets::series::read_plain_series("series.csv", bytes);
    Ok(())
}

/// Rows that look like trace rows: numbers (huge, negative, NaN), empty
/// fields and text, joined by commas, semicolons or tabs.
fn row_like() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        Just(String::new()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        Just("-1".to_string()),
        Just("NaN".to_string()),
        Just("1e309".to_string()),
        Just("18446744073709551616".to_string()),
        "[a-z0-9 .\"]{0,6}",
    ];
    let row = (
        prop::collection::vec(field, 0..22),
        prop::sample::select(vec![",", ";", "\t", ", "]),
    )
        .prop_map(|(f, sep)| f.join(sep));
    prop::collection::vec(row, 0..6).prop_map(|rows| rows.join("\n").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        all_tables(&bytes)?;
    }

    #[test]
    fn trace_like_rows_never_panic(bytes in row_like()) {
        all_tables(&bytes)?;
    }

    #[test]
    fn load_series_never_panics(bytes in row_like(), ext in prop::sample::select(vec!["csv", "txt", "csv.gz"])) {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let path = dir.path().join(format!("s.{ext}"));
        std::fs::write(&path, &bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match datasets::series::load_series(&path, None) {
            Ok(series) => {
                for s in series {
                    prop_assert!(s.values.iter().all(|v| v.is_finite()));
                }
            }
            Err(e) => prop_assert!(e.to_string().contains("s."), "{e}"),
        }
    }
}

/// Negative requests and capacities in the Google 2011 tables are row
/// errors (strict) or skipped rows (lenient), not silently accepted.
#[test]
fn negative_requests_and_capacities_are_refused() {
    let task = b"600000000,,1,0,5,0,user,0,9,-0.5,0.1,0.0,0\n";
    let mut r = TableReader::<TaskEvent>::from_reader("te.csv", &task[..], false).expect("open");
    let e = r.next_row().expect_err("negative CPU request").to_string();
    assert!(e.contains("te.csv:1") && e.contains("CPU request"), "{e}");
    let mut r = TableReader::<TaskEvent>::from_reader("te.csv", &task[..], true).expect("open");
    assert!(r.next_row().expect("lenient").is_none());
    assert_eq!(r.skipped(), 1);
    let machine = b"0,5,0,platform,0.5,-1\n";
    let mut r =
        TableReader::<MachineEvent>::from_reader("me.csv", &machine[..], false).expect("open");
    let e = r.next_row().expect_err("negative memory").to_string();
    assert!(e.contains("me.csv:1") && e.contains("Memory"), "{e}");
}
