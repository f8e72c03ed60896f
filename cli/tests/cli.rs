//! The `kernpack` command as a user meets it: help on every subcommand, the
//! version, errors that name the option and its accepted values, completions,
//! tolerant table input, and the demo's PNG. Runs on whatever backend is there
//! (the CPU in CI).
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kernpack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernpack"))
        .args(args)
        .output()
        .expect("run kernpack")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The subcommand names listed under "Commands:" in a help text.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // Continuation lines of a wrapped description are indented further.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernpack-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Words from the project's internal history that must not reach users.
fn assert_no_internal_words(what: &str, text: &str) {
    let lower = text.to_lowercase();
    for word in ["seed 0", "seed's", "seeds/", "models.md", "seeds.md"] {
        assert!(!lower.contains(word), "{what} mentions {word:?}:\n{text}");
    }
}

#[test]
fn every_subcommand_answers_help() {
    let top = kernpack(&["--help"]);
    assert!(top.status.success());
    let top_help = text(&top.stdout);
    assert_no_internal_words("kernpack --help", &top_help);
    let mut commands: Vec<Vec<String>> = subcommands(&top_help)
        .into_iter()
        .map(|c| vec![c])
        .collect();
    let bench = text(&kernpack(&["bench", "--help"]).stdout);
    commands.extend(
        subcommands(&bench)
            .into_iter()
            .map(|c| vec!["bench".into(), c]),
    );
    for expected in [
        "demo",
        "lombscargle",
        "lombscargle-batch",
        "bls",
        "pdm",
        "ce",
        "multiband",
        "lorenz96",
        "fg",
        "info",
    ] {
        assert!(
            commands.iter().any(|c| c == &[expected.to_owned()]),
            "{expected} missing from:\n{top_help}"
        );
    }
    assert!(
        commands.len() >= 15,
        "too few subcommands found: {commands:?}"
    );
    for command in &commands {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
            args.push(flag);
            let out = kernpack(&args);
            let help = text(&out.stdout);
            assert!(
                out.status.success(),
                "{args:?} failed: {}",
                text(&out.stderr)
            );
            assert!(help.contains("Usage: kernpack"), "{args:?}:\n{help}");
            assert_no_internal_words(&format!("{args:?}"), &help);
        }
    }
}

#[test]
fn version_is_the_crate_version() {
    let out = kernpack(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("kernpack {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_values_name_the_option_and_the_accepted_values() {
    let out = kernpack(&["lombscargle", "x.csv", "--dtype", "f16"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--dtype") && err.contains("f32, f64"), "{err}");

    let out = kernpack(&["lorenz96", "--backend", "tpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--backend") && err.contains("auto, gpu, cpu"),
        "{err}"
    );

    let out = kernpack(&["lorenz96", "--device", "0,x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--device"),
        "{}",
        text(&out.stderr)
    );

    // GPUs named for the CPU backend would be ignored: an error instead.
    let out = kernpack(&["lorenz96", "--backend", "cpu", "--device", "0,1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("--device") && err.contains("cpu"), "{err}");

    let out = kernpack(&["fg", "--colour"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--colour"));

    let out = kernpack(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("frobnicate"));
}

#[test]
fn runtime_errors_exit_1_with_the_reason() {
    let missing = scratch("does-not-exist.csv");
    let out = kernpack(&["lombscargle", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("kernpack: ") && err.contains("does-not-exist.csv"),
        "{err}"
    );
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_kernpack"),
        ("zsh", "#compdef kernpack"),
        ("fish", "complete -c kernpack"),
    ] {
        let out = kernpack(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {marker:?} missing");
        assert!(
            script.contains("lombscargle-batch"),
            "{shell}: subcommands missing"
        );
    }
}

/// A table as users write them: a comment, a header after it, commas and
/// runs of spaces mixed, a blank line, a trailing comment.
#[test]
fn lombscargle_reads_a_tolerant_table_and_finds_the_period() {
    let period = 2.5;
    let mut table = String::from("# a light curve\ntime, flux\n");
    for i in 0..300 {
        let t = i as f64 * 0.37 + 0.05 * ((i * 7) % 11) as f64;
        let y = 3.0 + (std::f64::consts::TAU * t / period).sin();
        let sep = if i % 2 == 0 { ", " } else { "   " };
        table.push_str(&format!("{t}{sep}{y}\n"));
        if i == 100 {
            table.push('\n');
        }
    }
    table.push_str("# end\n");
    let input = scratch("curve.txt");
    std::fs::write(&input, table).unwrap();
    let output = scratch("periodogram.csv");
    let out = kernpack(&[
        "lombscargle",
        input.to_str().unwrap(),
        "--floating-mean",
        "--fmin",
        "0.05",
        "--fmax",
        "1",
        "--nf",
        "4000",
        "--output",
        output.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(&output).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("frequency,angular_frequency,period,power")
    );
    let (best_period, _) = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (v[2], v[3])
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert!(
        (best_period - period).abs() < 0.01,
        "best period {best_period}"
    );
}

/// A light curve with a planted transit: 700 irregular samples over 30 days,
/// a box 0.02 deep and 0.12 long every 2.7 days (mid-transits at 1.3 + k P),
/// and noise of about 0.003 with per-sample uncertainties.
fn transit_curve(period: f64) -> String {
    let mut table = String::from("t,flux,flux_err\n");
    let mut uniform = uniforms(0x2545_f491_4f6c_dd1d);
    for i in 0..700 {
        let t = 30.0 * (i as f64 + uniform()) / 700.0;
        let phase = (t - 1.3 + 0.5 * period).rem_euclid(period) - 0.5 * period;
        let depth = if phase.abs() < 0.06 { 0.02 } else { 0.0 };
        // A sum of uniforms: noise of standard deviation about 0.003.
        let noise = 0.003 * ((0..4).map(|_| uniform()).sum::<f64>() - 2.0) * 3f64.sqrt();
        table.push_str(&format!("{t},{},{}\n", 1.0 - depth + noise, 0.003));
    }
    table
}

/// Uniform numbers in [0, 1) from an xorshift generator started at `state`.
fn uniforms(mut state: u64) -> impl FnMut() -> f64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A variable star: 600 irregular samples over 120 days of a periodic,
/// non-sinusoidal signal (a sinusoid and its first harmonic, 1.2 peak to
/// peak) of period `period`, noise of about 0.1 and per-sample
/// uncertainties dy from 0.05 to 0.15 in the third column.
fn variable_curve(period: f64) -> String {
    let mut table = String::from("t,mag,mag_err\n");
    let mut uniform = uniforms(0x9e37_79b9_7f4a_7c15);
    for i in 0..600 {
        let t = 120.0 * (i as f64 + uniform()) / 600.0;
        let phase = std::f64::consts::TAU * t / period;
        let signal = 0.5 * (phase + 0.3).sin() + 0.2 * (2.0 * phase).cos();
        let dy = 0.05 + 0.1 * uniform();
        // A sum of uniforms: noise of standard deviation about dy.
        let noise = dy * ((0..4).map(|_| uniform()).sum::<f64>() - 2.0) * 3f64.sqrt();
        table.push_str(&format!("{t},{},{dy}\n", 12.0 + signal + noise));
    }
    table
}

/// The rows of a table of `command` (pdm or ce) written by --output:
/// frequency, period and the statistic named `column`.
fn fold_table(csv: &str, column: &str) -> Vec<[f64; 3]> {
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(&*format!("frequency,period,{column}")));
    lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

#[test]
fn pdm_and_ce_find_a_planted_period_and_write_their_table_and_plot() {
    let period = 2.7;
    let input = scratch("variable.csv");
    std::fs::write(&input, variable_curve(period)).unwrap();
    let input = input.to_str().unwrap();
    let near = |found: f64| (found / period - 1.0).abs() < 0.005;
    for (command, column) in [("pdm", "theta"), ("ce", "entropy")] {
        let table = scratch(&format!("{command}.csv"));
        let figure = scratch(&format!("{command}.png"));
        // The default grid: 10 n frequencies from 1/span to n / (2 span).
        let out = kernpack(&[
            command,
            input,
            "--output",
            table.to_str().unwrap(),
            "--plot",
            figure.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{command}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let best = number_after_in(&stdout, "best period ");
        assert!(near(best), "{command}: {stdout}");
        let value = number_after_in(&stdout, &format!("): {column} "));
        assert!(stdout.contains("of 6000 from "), "{command}: {stdout}");

        // One row per frequency, increasing; the lowest value is the one reported.
        let rows = fold_table(&std::fs::read_to_string(&table).unwrap(), column);
        assert_eq!(rows.len(), 6000);
        assert!(rows.windows(2).all(|w| w[0][0] < w[1][0]));
        assert!(rows.iter().all(|r| r[2].is_finite()));
        let lowest = rows
            .iter()
            .reduce(|a, b| if b[2] < a[2] { b } else { a })
            .unwrap();
        assert_eq!((lowest[1], lowest[2]), (best, value), "{command}");
        if command == "pdm" {
            assert!(rows.iter().all(|r| (0.0..=1.0).contains(&r[2])));
            assert!(value < 0.2, "{stdout}");
        }

        // The figure: a PNG with room for both panels.
        let bytes = std::fs::read(&figure).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{command}");
        let (width, height, _, _) = decode_png(&figure);
        assert!(width >= 600 && height >= 600, "{width} x {height}");
    }

    // An explicit grid, more bins, f32, and the table on stdout (the summary then on stderr).
    let out = kernpack(&[
        "pdm", input, "--fmin", "0.2", "--fmax", "1", "--nf", "8000", "--bins", "20", "--dtype",
        "f32", "--output", "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = fold_table(&text(&out.stdout), "theta");
    assert_eq!(rows.len(), 8000);
    assert_eq!((rows[0][0], rows[7999][0]), (0.2, 1.0));
    let stderr = text(&out.stderr);
    assert!(near(number_after_in(&stderr, "best period ")), "{stderr}");

    // Frequencies from a file, and CE's overlapping bins.
    let freqs = scratch("fold-freqs.txt");
    let list: String = (0..4000)
        .map(|k| format!("{}\n", 0.2 + 0.8 * k as f64 / 4000.0))
        .collect();
    std::fs::write(&freqs, list).unwrap();
    let out = kernpack(&[
        "ce",
        input,
        "--freqs",
        freqs.to_str().unwrap(),
        "--phase-bins",
        "16",
        "--mag-bins",
        "8",
        "--phase-overlap",
        "1",
        "--mag-overlap",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(near(number_after_in(&stdout, "best period ")), "{stdout}");
    assert!(stdout.contains("of 4000 from 0.2 to "), "{stdout}");

    // The best distinct periods: the first is the best period, the others
    // worse and at least --separation away in frequency.
    let out = kernpack(&["pdm", input, "--peaks", "4", "--separation", "0.01"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let best = number_after_in(&stdout, "best period ");
    let listed = listed_peaks(&stdout, 4, &["period ", "frequency ", "theta "]);
    assert_eq!(listed[0][0], best, "{stdout}");
    for (i, p) in listed.iter().enumerate() {
        assert!(listed[..i].iter().all(|q| q[2] <= p[2]), "{stdout}");
        assert!(
            listed[..i].iter().all(|q| (q[1] - p[1]).abs() >= 0.01),
            "{stdout}"
        );
    }
}

/// A light curve in 3 bands (labels 0, 7 and 4000000000) with the period
/// planted in every band at its own offset and amplitude: t, y, dy, band.
/// `--nterms`: astropy's generalised periodogram, its peaks and their
/// false-alarm probabilities (checked against the library's own), and the
/// refusals that name the option.
#[test]
fn lombscargle_nterms_lists_peaks_with_false_alarm_probabilities() {
    let mut next = uniforms(5);
    let (period, mut csv) = (3.7, String::from("t,y,weight\n"));
    let (mut t, mut ys, mut dy) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..300 {
        let ti = 100.0 * next();
        let w = 1.0 + 3.0 * next();
        let y = (std::f64::consts::TAU * ti / period).sin() + (next() - 0.5);
        csv += &format!("{ti},{y},{w}\n");
        t.push(ti);
        ys.push(y);
        dy.push(w.powf(-0.5));
    }
    let input = scratch("nterms.csv");
    std::fs::write(&input, csv).unwrap();
    let table = scratch("nterms-out.csv");
    let (input, table) = (input.to_str().unwrap(), table.to_str().unwrap());
    let grid = ["--fmin", "0.01", "--fmax", "2", "--nf", "20000"];
    let mut args = vec!["lombscargle", input, "--nterms", "1", "--peaks", "3"];
    args.extend(grid);
    args.extend(["--separation", "0.01", "--fap", "baluev", "-o", table]);
    let out = kernpack(&args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let best = number_after_in(&stderr, "best period ");
    assert!((best - period).abs() < 0.01, "{stderr}");
    let null =
        kernpack::NullDistribution::new(2.0, &t, Some(&dy), kernpack::PowerNormalization::Standard)
            .unwrap();
    let peaks = listed_peaks(&stderr, 3, &["power ", "FAP "]);
    for p in &peaks {
        let (power, fap) = (p[0], p[1]);
        let want = null.false_alarm_probability(power, kernpack::FapMethod::Baluev);
        assert!((fap - want).abs() <= 1e-4 * want, "{stderr}: want {want:e}");
    }
    assert!(peaks.windows(2).all(|p| p[0][0] >= p[1][0]), "{stderr}");
    let csv = std::fs::read_to_string(table).unwrap();
    assert_eq!(csv.lines().count(), 20001);
    // The bootstrap, any --nterms: each listed FAP is the fraction of the
    // library's resampled maxima (same series, seed and grid) not below it.
    let mut args = vec!["lombscargle", input, "--nterms", "2", "--peaks", "3"];
    args.extend(grid);
    args.extend([
        "--separation",
        "0.01",
        "--fap",
        "bootstrap",
        "--resamples",
        "200",
    ]);
    args.extend(["--fap-seed", "9", "-o", table]);
    let out = kernpack(&args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let series = kernpack::api::lombscargle::chi2::Chi2Series {
        t: &t,
        y: &ys,
        dy: Some(&dy),
    };
    let opts = kernpack::api::lombscargle::chi2::Chi2Options {
        nterms: 2,
        ..Default::default()
    };
    let boot = kernpack::api::lombscargle::bootstrap::BootstrapOptions {
        resamples: 200,
        seed: 9,
        ..Default::default()
    };
    let cpu = kernpack::Kernpack::new(kernpack::Backend::Cpu).unwrap();
    let maxima = cpu
        .lombscargle_chi2_bootstrap(&series, 2.0, &opts, &boot)
        .unwrap();
    for p in listed_peaks(&stderr, 3, &["power ", "FAP "]) {
        let (power, fap) = (p[0], p[1]);
        let want = kernpack::api::lombscargle::bootstrap::bootstrap_false_alarm_probability(
            &maxima, power,
        );
        assert!((fap - want).abs() <= 1e-4 * want, "{stderr}: want {want:e}");
    }
    for (args, needle) in [
        (
            vec!["lombscargle", input, "--nterms", "2", "--fap", "baluev"],
            "--fap",
        ),
        (vec!["lombscargle", input, "--nterms", "9"], "--nterms"),
        (vec!["lombscargle", input, "--fap", "baluev"], "--nterms"),
        (
            vec!["lombscargle", input, "--nterms", "1", "--resamples", "10"],
            "--fap",
        ),
        (
            vec![
                "lombscargle",
                input,
                "--nterms",
                "1",
                "--fap",
                "bootstrap",
                "--resamples",
                "0",
            ],
            "--resamples",
        ),
        (
            vec!["lombscargle", input, "--nterms", "1", "--normalize", "psd"],
            "--normalize",
        ),
    ] {
        let out = kernpack(&args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

fn multiband_curve(period: f64) -> String {
    let mut next = uniforms(11);
    let mut csv = String::from("t,y,dy,band\n");
    for i in 0..240 {
        let (label, level, amp) = [
            (0u32, 10.0, 1.0),
            (7, 12.0, 0.5),
            (4_000_000_000, 15.0, 2.0),
        ][i % 3];
        let t = 100.0 * next();
        let y = level + amp * (std::f64::consts::TAU * t / period).sin() + 0.2 * (next() - 0.5);
        csv += &format!("{t},{y},0.2,{label}\n");
    }
    csv
}

#[test]
fn multiband_finds_a_planted_period_and_writes_its_table() {
    let input = scratch("multiband.csv");
    std::fs::write(&input, multiband_curve(2.7)).unwrap();
    let table = scratch("multiband-out.csv");
    let (input, table) = (input.to_str().unwrap(), table.to_str().unwrap());
    for method in ["flexible", "fast"] {
        let out = kernpack(&[
            "multiband",
            input,
            "--fmin",
            "0.05",
            "--fmax",
            "2",
            "--nf",
            "6000",
            "--method",
            method,
            "--peaks",
            "2",
            "--separation",
            "0.01",
            "-o",
            table,
        ]);
        assert!(out.status.success(), "{method}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let best = number_after_in(&stdout, "best period ");
        assert!((best - 2.7).abs() < 0.01, "{method}: {stdout}");
        assert!(stdout.contains("peak 2: period"), "{stdout}");
        let csv = std::fs::read_to_string(table).unwrap();
        assert!(csv.starts_with("frequency,period,power\n"), "{csv}");
        assert_eq!(csv.lines().count(), 6001);
    }
    // Bad input: named.
    let bad = scratch("multiband-bad.csv");
    std::fs::write(&bad, "1,2,0.5\n2,3,1.5\n").unwrap();
    let out = kernpack(&["multiband", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("band 0.5 is not a whole number"),
        "{}",
        text(&out.stderr)
    );
    for (args, needle) in [
        (
            vec!["multiband", input, "--nterms-band", "4"],
            "--nterms-band",
        ),
        (
            vec![
                "multiband",
                input,
                "--nterms-base",
                "0",
                "--nterms-band",
                "0",
            ],
            "nterms_base",
        ),
        (vec!["multiband", input, "--method", "slow"], "--method"),
        (vec!["multiband", input, "--reg-band=-1"], "reg_band"),
    ] {
        let out = kernpack(&args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// The band column anywhere, named or numbered, its labels text or numbers:
/// the same bands give the same periodogram, bit for bit.
#[test]
fn multiband_reads_the_band_column_by_name_or_number_with_text_labels() {
    let mut next = uniforms(23);
    // Text labels sort as g < i < r: numbered 0, 1, 2 in the numeric table.
    let (mut text_table, mut numeric_table) = (
        String::from("mjd,filter,mag,magerr\n"),
        String::from("t,y,dy,band\n"),
    );
    for i in 0..180 {
        let (label, number, level) = [("g", 0, 10.0), ("r", 2, 11.0), ("i", 1, 12.5)][i % 3];
        let t = 80.0 * next();
        let y = level + (std::f64::consts::TAU * t / 3.1).sin() + 0.3 * (next() - 0.5);
        let dy = 0.1 + 0.2 * next();
        text_table += &format!("{t},{label},{y},{dy}\n");
        numeric_table += &format!("{t},{y},{dy},{number}\n");
    }
    let (text_path, numeric_path) = (scratch("mb-text.csv"), scratch("mb-numeric.csv"));
    std::fs::write(&text_path, text_table).unwrap();
    std::fs::write(&numeric_path, numeric_table).unwrap();
    let (text_path, numeric_path) = (text_path.to_str().unwrap(), numeric_path.to_str().unwrap());
    let grid = ["--fmin", "0.05", "--fmax", "2", "--nf", "3000"];
    let table = |input: &str, bands: &[&str], name: &str| {
        let out_path = scratch(name);
        let mut args = vec!["multiband", input, "-o", out_path.to_str().unwrap()];
        args.extend_from_slice(bands);
        args.extend_from_slice(&grid);
        let out = kernpack(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        std::fs::read_to_string(out_path).unwrap()
    };
    let want = table(numeric_path, &[], "mb-numeric-out.csv");
    assert_eq!(want.lines().count(), 3001);
    assert_eq!(
        table(text_path, &["--bands", "filter"], "mb-named.csv"),
        want
    );
    assert_eq!(table(text_path, &["--bands", "2"], "mb-numbered.csv"), want);
    assert_eq!(
        table(numeric_path, &["--bands", "band"], "mb-band.csv"),
        want
    );
    // Columns that are not there, or a name without a header: named errors.
    let headerless = scratch("mb-headerless.csv");
    std::fs::write(&headerless, "1,g,10,0.1\n2,r,11,0.1\n3,g,10.5,0.1\n").unwrap();
    let headerless = headerless.to_str().unwrap();
    for (input, column, needle) in [
        (text_path, "5", "--bands 5: the rows have columns 1 to 4"),
        (text_path, "0", "--bands 0: the rows have columns 1 to 4"),
        (
            text_path,
            "ra",
            "--bands ra: no such column in the header (mjd, filter, mag, magerr)",
        ),
        (
            headerless,
            "filter",
            "--bands filter: no header line names the columns",
        ),
        // Columns that cannot be bands, or leave text among the numbers.
        (
            numeric_path,
            "3",
            "is not a whole number from 0 to 4294967295",
        ),
        (
            text_path,
            "4",
            "mb-text.csv:2: invalid float literal: \"g\"",
        ),
    ] {
        let out = kernpack(&["multiband", input, "--bands", column]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{column}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(needle),
            "{column}: {}",
            text(&out.stderr)
        );
    }
    // A text label in the default column of a headerless table works too.
    let out = kernpack(&[
        "multiband",
        headerless,
        "--bands",
        "2",
        "--nf",
        "100",
        "--fmin",
        "0.1",
        "--fmax",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn pdm_and_ce_refuse_bad_arguments_by_name() {
    let input = small_series("fold-args.csv");
    let input = input.to_str().unwrap();
    let freqs = scratch("fold-args-freqs.txt");
    std::fs::write(&freqs, "0.1\n0.2\n").unwrap();
    let freqs = freqs.to_str().unwrap();
    // Out of the options' ranges, or together with one they exclude: clap's
    // usage errors (status 2), naming the option and what it takes.
    for (args, names) in [
        (
            vec!["pdm", input, "--bins", "1"],
            &["--bins", "2..=4096"][..],
        ),
        (
            vec!["pdm", input, "--bins", "4097"],
            &["--bins", "2..=4096"],
        ),
        (
            vec!["ce", input, "--phase-bins", "0"],
            &["--phase-bins", "1..=65536"],
        ),
        (
            vec!["ce", input, "--mag-bins", "0"],
            &["--mag-bins", "1..=65536"],
        ),
        (vec!["ce", input, "--mag-overlap=-1"], &["--mag-overlap"]),
        (
            vec!["ce", input, "--dtype", "f16"],
            &["--dtype", "f32, f64"],
        ),
        (
            vec!["pdm", input, "--freqs", freqs, "--nf", "9"],
            &["--freqs", "--nf"],
        ),
        (vec!["pdm", input, "--angular"], &["--angular", "--freqs"]),
        (vec!["pdm"], &["<INPUT>"]),
        (vec!["pdm", input, "--peaks", "0"], &["--peaks", "1..=256"]),
        (
            vec!["ce", input, "--separation", "0.1"],
            &["--separation", "--peaks"],
        ),
    ] {
        let out = kernpack(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for name in names {
            assert!(err.contains(name), "{args:?}: {name:?} missing from {err}");
        }
    }
    // What only the library or the data can tell: status 1, the reason.
    let constant = scratch("fold-constant.csv");
    std::fs::write(&constant, "1,5\n2,5\n3,5\n4,5\n").unwrap();
    let zero_dy = scratch("fold-zero-dy.csv");
    std::fs::write(&zero_dy, "1,5,0.1\n2,6,0\n3,5,0.1\n4,7,0.1\n").unwrap();
    let (constant, zero_dy) = (constant.to_str().unwrap(), zero_dy.to_str().unwrap());
    let gif = scratch("fold.gif");
    for (args, names) in [
        (
            vec!["ce", input, "--phase-bins", "4", "--phase-overlap", "4"],
            "phase_overlap = 4 and mag_overlap = 0 must be below phase_bins = 4",
        ),
        (
            vec!["ce", input, "--phase-bins", "300", "--mag-bins", "300"],
            "300 x 300 exceeds 65536 cells",
        ),
        (vec!["pdm", input, "--fmin", "2", "--fmax", "1"], "--fmin"),
        (
            vec!["pdm", constant, "--fmin", "0.1", "--fmax", "1"],
            "no best period",
        ),
        (
            vec!["ce", constant, "--fmin", "0.1", "--fmax", "1"],
            "no best period",
        ),
        (vec!["pdm", zero_dy], "dy[1] = 0 is not positive"),
        (
            vec!["ce", input, "--plot", gif.to_str().unwrap()],
            "unsupported extension",
        ),
        (vec!["pdm", "no-such-curve.csv"], "no-such-curve.csv"),
    ] {
        let out = kernpack(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        // After the timing line of a run that computed.
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("kernpack: ") && last.contains(names),
            "{args:?}: expected {names:?} in {err}"
        );
    }
    // --angular with --freqs is taken.
    let out = kernpack(&["pdm", input, "--freqs", freqs, "--angular"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn bls_finds_a_planted_transit_and_writes_its_table_and_plot() {
    let period = 2.7;
    let input = scratch("transit.csv");
    std::fs::write(&input, transit_curve(period)).unwrap();
    let (table, figure) = (scratch("bls.csv"), scratch("bls.svg"));
    // The default period grid (evenly spaced in frequency from 2 max(duration)
    // to a third of the baseline).
    let out = kernpack(&[
        "bls",
        input.to_str().unwrap(),
        "--durations",
        "0.08,0.12,0.16",
        "--output",
        table.to_str().unwrap(),
        "--plot",
        figure.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let number_after = |label: &str| number_after_in(&stdout, label);
    let best = number_after("best period ");
    assert!((best - period).abs() < 0.005, "{stdout}");
    assert!((number_after("duration ") - 0.12).abs() < 0.03, "{stdout}");
    assert!((number_after("depth ") - 0.02).abs() < 0.003, "{stdout}");
    // The transit time is a mid-transit, within a duration of one planted.
    let t0 = number_after("transit time ");
    let off = (t0 - 1.3 + 0.5 * period).rem_euclid(period) - 0.5 * period;
    assert!(off.abs() < 0.06, "{stdout}");
    assert!(number_after("depth SNR ") > 20.0, "{stdout}");

    // The table: one row per trial period, increasing, its best row the one reported.
    let csv = std::fs::read_to_string(&table).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("period,power,depth,depth_err,duration,transit_time,depth_snr,log_likelihood")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!(rows.len() > 1000, "{} periods", rows.len());
    assert!(rows.windows(2).all(|w| w[0][0] < w[1][0]));
    // Equal powers are exact ties (boxes holding the same samples): the first counts.
    let top = rows
        .iter()
        .filter(|r| r[1].is_finite())
        .reduce(|a, b| if b[1] > a[1] { b } else { a })
        .unwrap();
    assert_eq!(top[0], best);
    // The first period is twice the longest duration, the last about half the
    // baseline (three transits), the grid 0.08 / baseline^2 apart in frequency.
    assert!((rows[0][0] - 0.32).abs() < 1e-12, "{}", rows[0][0]);
    let last = rows[rows.len() - 1][0];
    assert!(last > 14.8 && last <= 15.0, "{last}");
    let df = 1.0 / rows[0][0] - 1.0 / rows[1][0];
    assert!((df * 30.0 * 30.0 / 0.08 - 1.0).abs() < 0.01, "{df}");

    let svg = std::fs::read_to_string(&figure).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("box model"),
        "no figure"
    );

    // An explicit grid, the other objective and f32 find it too.
    let out = kernpack(&[
        "bls",
        input.to_str().unwrap(),
        "--durations",
        "0.12",
        "--pmin",
        "2",
        "--pmax",
        "4",
        "--nperiods",
        "3000",
        "--objective",
        "snr",
        "--dtype",
        "f32",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("(of 3000 from 2 to 4"), "{stdout}");
    let best = number_after_in(&stdout, "best period ");
    assert!((best - period).abs() < 0.005, "{stdout}");

    // The best distinct periods: the first is the best period, the others
    // weaker and at least --separation apart.
    let out = kernpack(&[
        "bls",
        input.to_str().unwrap(),
        "--durations",
        "0.12",
        "--pmin",
        "1",
        "--pmax",
        "6",
        "--nperiods",
        "4000",
        "--peaks",
        "3",
        "--separation",
        "0.2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let best = number_after_in(&stdout, "best period ");
    let listed = listed_peaks(&stdout, 3, &["period ", "power "]);
    assert_eq!(listed[0][0], best, "{stdout}");
    for (i, p) in listed.iter().enumerate() {
        assert!(listed[..i].iter().all(|q| q[1] >= p[1]), "{stdout}");
        assert!(
            listed[..i].iter().all(|q| (q[0] - p[0]).abs() >= 0.2),
            "{stdout}"
        );
    }

    // A duration as long as a period is refused, naming both.
    let out = kernpack(&[
        "bls",
        input.to_str().unwrap(),
        "--durations",
        "0.5",
        "--pmin",
        "0.4",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("duration") && stderr.contains("period"),
        "{stderr}"
    );
}

/// The numbers after `labels` on the lines "peak 1: ..." to "peak k: ..." of
/// a search's summary.
fn listed_peaks(stdout: &str, k: usize, labels: &[&str]) -> Vec<Vec<f64>> {
    (1..=k)
        .map(|r| {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&format!("peak {r}: ")))
                .unwrap_or_else(|| panic!("no peak {r} in {stdout}"));
            labels.iter().map(|l| number_after_in(line, l)).collect()
        })
        .collect()
}

/// The number that follows `label` in `text` (up to white space or a comma).
fn number_after_in(text: &str, label: &str) -> f64 {
    let rest = &text[text
        .find(label)
        .unwrap_or_else(|| panic!("{label}: {text}"))
        + label.len()..];
    let end = rest
        .find(|c: char| c == ',' || c.is_whitespace())
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("{label}: {e}: {text}"))
}

/// Decodes a PNG: (width, height, pixel bytes, samples per pixel).
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>, usize) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels, info.color_type.samples())
}

#[test]
fn demo_writes_a_compressed_png_of_the_periodogram_and_folded_light_curve() {
    let path = scratch("demo.png");
    // Fewer frequencies than the default keep the debug-build test quick; the
    // figure's size does not depend on them.
    let out = kernpack(&["demo", "--plot", path.to_str().unwrap(), "--nf", "20000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("recovered 3.69"), "{stdout}");
    let bytes = std::fs::metadata(&path).unwrap().len();
    assert!(bytes < 200_000, "demo PNG is {bytes} bytes");
    let (width, height, pixels, channels) = decode_png(&path);
    assert!(
        width >= 600 && height >= 600,
        "{width} x {height}: room for two panels"
    );
    assert_eq!(pixels.len(), (width * height) as usize * channels);
    // A drawn figure, not a blank canvas: several colours (text, axes, the
    // spectrum, the marker, the points and the fit), and ink in both halves,
    // where the periodogram and the folded light curve sit.
    let mut colours: Vec<&[u8]> = pixels.chunks_exact(channels).collect();
    colours.sort();
    colours.dedup();
    assert!(colours.len() >= 5, "only {} colours", colours.len());
    let background = &pixels[..channels];
    let row_bytes = width as usize * channels;
    let ink = |rows: std::ops::Range<usize>| {
        pixels[rows.start * row_bytes..rows.end * row_bytes]
            .chunks_exact(channels)
            .filter(|p| *p != background)
            .count() as f64
            / ((rows.end - rows.start) * width as usize) as f64
    };
    let half = height as usize / 2;
    for (name, share) in [
        ("top", ink(0..half)),
        ("bottom", ink(half..height as usize)),
    ] {
        assert!(
            (0.01..0.6).contains(&share),
            "{name} half: {:.1}% of pixels drawn",
            share * 100.0
        );
    }
}

/// The README shows `kernpack --help` verbatim; this keeps it the real output.
#[test]
fn readme_shows_the_real_top_level_help() {
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(readme).expect("README.md");
    let help = text(&kernpack(&["--help"]).stdout);
    let shown = format!(
        "$ kernpack --help\n{}```",
        help.trim_end_matches('\n').to_owned() + "\n"
    );
    assert!(
        readme.contains(&shown),
        "README.md's `kernpack --help` block differs from the real output:\n{help}"
    );
}

/// The library links none of the command's dependencies: `cargo tree` of the
/// `kernpack` package (normal and build dependencies) names none of them.
#[test]
fn the_library_has_no_cli_dependency() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--manifest-path", manifest])
        .args(["-p", "kernpack", "-e", "normal,build", "--prefix", "none"])
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tree = text(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"cudarc"), "unexpected tree:\n{tree}");
    for cli_only in ["clap", "clap_complete", "indicatif", "png", "plotters"] {
        assert!(
            !crates.contains(&cli_only),
            "the library depends on {cli_only}:\n{tree}"
        );
    }
}

/// `--threads` sets the CPU backend's thread count (any command, before or
/// after it); 0 or a garbage count is refused by the parser.
#[test]
fn threads_option_is_taken_and_checked() {
    for args in [
        &["--threads", "3", "info"][..],
        &["info", "--threads", "3"][..],
    ] {
        let out = kernpack(args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("CPU backend: 3 threads"),
            "{}",
            text(&out.stdout)
        );
    }
    // 0 restores the default, as in every other language's setter.
    let out = kernpack(&["--threads", "0", "info"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for bad in ["-1", "4097", "many"] {
        let out = kernpack(&[&format!("--threads={bad}"), "info"]);
        assert_eq!(out.status.code(), Some(2), "--threads {bad}");
        assert!(
            text(&out.stderr).contains("--threads"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// `kernpack bench ... --backend cpu` times the CPU backend (tiny sizes here:
/// this checks the commands run and report, not speed).
#[test]
fn benchmarks_run_on_the_cpu_backend() {
    let runs: [&[&str]; 4] = [
        &[
            "bench",
            "lombscargle",
            "--backend",
            "cpu",
            "--nx",
            "50",
            "--nf",
            "300",
            "--uniform",
            "--reps",
            "1",
        ],
        &[
            "bench",
            "lombscargle-batch",
            "--backend",
            "cpu",
            "--nseries",
            "5",
            "--nf",
            "100",
            "--reps",
            "1",
        ],
        &[
            "bench",
            "reduce",
            "--backend",
            "cpu",
            "--n",
            "10000",
            "--reps",
            "1",
        ],
        &[
            "bench",
            "box-filter",
            "--backend",
            "cpu",
            "--rows",
            "64",
            "--size",
            "5",
            "--reps",
            "1",
        ],
    ];
    for args in runs {
        let out = kernpack(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("RESULT kernpack") && stdout.contains("backend=cpu"),
            "{args:?}: {stdout}"
        );
    }
}

/// Without a GPU a benchmark of the default backend fails, saying what can
/// be timed instead (a benchmark never falls back on its own).
#[test]
fn a_gpu_benchmark_without_a_gpu_names_the_cpu_backend() {
    if kernpack::Gpu::get(0).is_ok() {
        return; // the GPU benchmark runs here; the GPU machine's runs time it
    }
    let out = kernpack(&[
        "bench",
        "lombscargle",
        "--nx",
        "50",
        "--nf",
        "100",
        "--reps",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no usable GPU") && text(&out.stderr).contains("--backend cpu"),
        "{}",
        text(&out.stderr)
    );
    let out = kernpack(&["bench", "normalize-streams"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("GPU streams only"),
        "{}",
        text(&out.stderr)
    );
}

/// The rows of a `series,samples,best_frequency,best_period,best_power` table.
fn best_table(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// `lombscargle-batch` computes only the peaks unless the periodograms are
/// asked for; both routes must name the same best frequency of every series
/// (frequency 0 left out), the one the written periodograms peak at, and
/// find the sinusoid each series was drawn with.
#[test]
fn batch_peaks_agree_with_the_written_periodograms() {
    // Fresh data each run; KERNPACK_TEST_SEED=N repeats a failing one.
    let seed = std::env::var("KERNPACK_TEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
        | 1;
    let mut state = seed;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let series = 7;
    // Periods within the default grids (1/span to n/(2 span) cycles per unit);
    // the last series is a trend instead (a mean far from 0), whose best
    // peak on a grid from 0 is the one after 0: index 0 of the computed grid.
    let periods: Vec<f64> = (0..series).map(|_| 4.0 + 16.0 * uniform()).collect();
    let trend = series - 1;
    let mut csv = String::from("id,t,y,weight\n");
    // Rows of the series interleaved: a series' rows need not be adjacent.
    for i in 0..150 {
        for (s, p) in periods.iter().enumerate() {
            if i < 60 + 12 * s {
                let t = 100.0 * uniform();
                let signal = if s == trend {
                    t / 20.0
                } else {
                    (std::f64::consts::TAU * t / p).sin()
                };
                let y = signal + 0.3 * (uniform() - 0.5);
                csv += &format!("star{s},{t},{y},{}\n", 0.5 + uniform());
            }
        }
    }
    let input = scratch("batch-peaks.csv");
    std::fs::write(&input, csv).unwrap();
    let input = input.to_str().unwrap();
    let runs = [
        (&[][..], "f64", "power"),
        (&[][..], "f32", "amplitude"),
        // Not amplitude from frequency 0: a fit's amplitude diverges there.
        (&["--fmin", "0", "--fmax", "2"][..], "f64", "power"),
        (&["--fmin", "0", "--fmax", "2"][..], "f32", "normalize"),
    ];
    for (grid, dtype, normalize) in runs {
        {
            let name = format!("{dtype}-{normalize}-{}.csv", grid.len());
            let peaks_out = scratch(&format!("peaks-{name}"));
            let whole_out = scratch(&format!("whole-{name}"));
            let pgrams = scratch(&format!("pgrams-{name}"));
            let mut base = vec![
                "lombscargle-batch",
                input,
                "--nf",
                "3000",
                "--dtype",
                dtype,
                "--normalize",
                normalize,
            ];
            base.extend_from_slice(grid);
            let mut args = base.clone();
            args.extend(["-o", peaks_out.to_str().unwrap()]);
            let out = kernpack(&args);
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
            let mut args = base.clone();
            args.extend(["-o", whole_out.to_str().unwrap()]);
            args.extend(["--periodograms", pgrams.to_str().unwrap()]);
            let out = kernpack(&args);
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));

            let (peaks, whole) = (best_table(&peaks_out), best_table(&whole_out));
            let what = format!("seed {seed}, {dtype}, {normalize}, grid {grid:?}");
            assert_eq!(peaks.len(), series, "{what}");
            // The highest value of each series in the periodograms file, at f > 0.
            let mut highest = std::collections::HashMap::<String, (f64, f64)>::new();
            for line in std::fs::read_to_string(&pgrams).unwrap().lines().skip(1) {
                let v: Vec<&str> = line.split(',').collect();
                let (f, p): (f64, f64) = (v[1].parse().unwrap(), v[2].parse().unwrap());
                let best = highest
                    .entry(v[0].to_owned())
                    .or_insert((f64::NAN, f64::NEG_INFINITY));
                if f > 0.0 && p > best.1 {
                    *best = (f, p);
                }
            }
            for (s, (a, b)) in peaks.iter().zip(&whole).enumerate() {
                assert_eq!(a[..3], b[..3], "{what}: series, samples, best frequency");
                let (fa, pa, pb): (f64, f64, f64) = (
                    a[2].parse().unwrap(),
                    a[4].parse().unwrap(),
                    b[4].parse().unwrap(),
                );
                // Without a shift the peaks are the periodograms' own values
                // (amplitude: the modulus, taken on each side, within ulps);
                // `--fmin 0` computes the grid from its second frequency, whose
                // angular frequencies may round differently (measured: 3.5e-7
                // relative at most in f32).
                let tol = if grid.is_empty() && normalize == "power" {
                    0.0
                } else {
                    1e-5 * pb.abs()
                };
                assert!((pa - pb).abs() <= tol, "{what}: power {pa} vs {pb}");
                assert_eq!(
                    highest[&a[0]].0, fa,
                    "{what}: the periodograms peak elsewhere"
                );
                if s == trend && grid.is_empty() {
                    continue; // from 1/span the trend's peak may lie a step or two up
                }
                if s == trend {
                    let lowest = lowest_nonzero_frequency(&pgrams, &a[0]);
                    assert_eq!(
                        fa, lowest,
                        "{what}: the trend peaks at its grid's first non-zero frequency"
                    );
                    continue;
                }
                // The sinusoid dominates its noise: the best period is the drawn one
                // to within the grid's step.
                let period = 1.0 / fa;
                let p = periods[s];
                assert!(
                    (period - p).abs() < 0.05 * p,
                    "{what}: star{s} period {period} vs {p}"
                );
            }
        }
    }
}

/// The lowest non-zero frequency of `series` in a periodograms file.
fn lowest_nonzero_frequency(pgrams: &Path, series: &str) -> f64 {
    std::fs::read_to_string(pgrams)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| l.starts_with(&format!("{series},")))
        .map(|l| l.split(',').nth(1).unwrap().parse::<f64>().unwrap())
        .filter(|&f| f > 0.0)
        .fold(f64::INFINITY, f64::min)
}

/// With `--fmin 0 --nf 1` the only frequency is 0 and no series has a best
/// period, but bad input is still refused, as with `--periodograms`.
#[test]
fn batch_with_only_frequency_zero_still_checks_its_input() {
    let bad = scratch("batch-zero-bad.csv");
    std::fs::write(&bad, "a,0,1\na,1,nan\na,2,0.5\nb,0,1\nb,1,2\n").unwrap();
    let good = scratch("batch-zero-good.csv");
    std::fs::write(&good, "a,0,1\na,1,3\na,2,0.5\nb,0,1\nb,1,2\n").unwrap();
    let periodograms = scratch("batch-zero-periodograms.csv");
    for extra in [
        &[][..],
        &["--periodograms", periodograms.to_str().unwrap()][..],
    ] {
        for (input, accepted) in [(&bad, false), (&good, true)] {
            let mut args = vec!["lombscargle-batch", input.to_str().unwrap()];
            args.extend(["--fmin", "0", "--fmax", "1", "--nf", "1"]);
            args.extend_from_slice(extra);
            let out = kernpack(&args);
            if !accepted {
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{args:?} accepted NaN: {}",
                    text(&out.stdout)
                );
                assert!(
                    text(&out.stderr).contains("NaN"),
                    "{args:?}: {}",
                    text(&out.stderr)
                );
                continue;
            }
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
            let rows = text(&out.stdout);
            assert!(
                rows.lines().count() == 3 && rows.lines().skip(1).all(|l| l.ends_with(",,,")),
                "{args:?}: frequency 0 alone gives no best period:\n{rows}"
            );
        }
    }
}

/// A run that fails must not look like a crash: exit 1, a message, no panic.
fn assert_fails_cleanly(out: &Output, names: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.starts_with("kernpack: ") && err.contains(names),
        "expected {names:?} in {err}"
    );
}

fn small_series(name: &str) -> PathBuf {
    let input = scratch(name);
    let rows: String = (0..40)
        .map(|i| format!("{},{}\n", i as f64 * 0.7, (i as f64 * 1.3).sin()))
        .collect();
    std::fs::write(&input, rows).unwrap();
    input
}

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return; // Linux only
    }
    let plot = scratch("full.svg");
    for args in [
        &["info"][..],
        &["demo", "--nf", "2000", "--plot", plot.to_str().unwrap()],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kernpack"))
            .args(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_fails_cleanly(&out, "stdout");
    }
}

#[test]
fn sizes_no_memory_holds_are_refused_before_anything_is_allocated() {
    let input = small_series("sizes.csv");
    let input = input.to_str().unwrap();
    let huge = u64::MAX.to_string();
    // 2^54 f64 values: past the largest array any host can address.
    let past = (1u64 << 54).to_string();
    for (args, names) in [
        (vec!["lombscargle", input, "--nf", huge.as_str()], "--nf"),
        (vec!["lombscargle", input, "--nf", past.as_str()], "--nf"),
        (vec!["lorenz96", "--n", huge.as_str()], "--n"),
        (
            vec!["lorenz05", "--n", past.as_str(), "--members", "1"],
            "--n",
        ),
        (vec!["fg", "--n", "4294967295"], "--n"),
        (
            vec!["bench", "reduce", "--backend", "cpu", "--n", huge.as_str()],
            "--n",
        ),
        (
            vec![
                "bench",
                "lombscargle",
                "--backend",
                "cpu",
                "--nx",
                past.as_str(),
            ],
            "--nx",
        ),
        (
            vec![
                "bench",
                "lorenz96",
                "--backend",
                "cpu",
                "--n",
                huge.as_str(),
            ],
            "--n",
        ),
        (
            vec![
                "bench",
                "box-filter",
                "--backend",
                "cpu",
                "--rows",
                "4294967296",
            ],
            "--rows",
        ),
    ] {
        assert_fails_cleanly(&kernpack(&args), names);
    }
}

#[test]
fn table_input_edge_cases_are_read_or_refused_by_line() {
    // A byte-order mark (spreadsheet exports) before a numeric first row:
    // every row is data.
    let bom = scratch("bom.csv");
    let rows: String = (0..40)
        .map(|i| format!("{},{}\n", i, (i as f64).sin()))
        .collect();
    std::fs::write(&bom, format!("\u{feff}{rows}")).unwrap();
    let out = kernpack(&[
        "lombscargle",
        bom.to_str().unwrap(),
        "-o",
        scratch("bom-out.csv").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("40 samples"),
        "{}",
        text(&out.stderr)
    );
    // A first row with a number in it is data, not a header: its bad field is an error.
    let typo = scratch("typo.csv");
    std::fs::write(&typo, "1,2x\n2,3\n3,1\n4,5\n").unwrap();
    assert_fails_cleanly(
        &kernpack(&["lombscargle", typo.to_str().unwrap()]),
        "typo.csv:1",
    );
    // A --freqs line of separators only.
    let freqs = scratch("comma-freqs.txt");
    std::fs::write(&freqs, ",\n0.1\n").unwrap();
    let input = small_series("freqs-series.csv");
    let out = kernpack(&[
        "lombscargle",
        input.to_str().unwrap(),
        "--freqs",
        freqs.to_str().unwrap(),
    ]);
    assert_fails_cleanly(&out, "comma-freqs.txt");
    // Batch: a series too short for its default grid is named by its id.
    let batch = scratch("short.csv");
    std::fs::write(&batch, "id,t,y\nlonely,1,2\nb,1,2\nb,2,3\nb,3,1\nb,4,2\n").unwrap();
    assert_fails_cleanly(
        &kernpack(&["lombscargle-batch", batch.to_str().unwrap()]),
        "series lonely",
    );
}

#[test]
fn a_failing_run_writes_no_output() {
    let input = small_series("no-output.csv");
    // A folder of its own: other tests write beside each other meanwhile.
    let dir = scratch("failing-run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("never-written.csv");
    let missing_dir = dir.join("no-such-dir").join("p.png");
    for plot in [dir.join("p.gif"), missing_dir] {
        let out = kernpack(&[
            "lombscargle",
            input.to_str().unwrap(),
            "-o",
            csv.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ]);
        assert_fails_cleanly(&out, "p.");
        assert!(!csv.exists(), "a failed run wrote {}", csv.display());
    }
    // Nothing is left beside the target either.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            !name.to_string_lossy().ends_with(".part"),
            "{name:?} left behind"
        );
    }
}

#[test]
fn the_demo_recovers_periods_across_its_range() {
    for period in ["150", "400"] {
        let plot = scratch(&format!("demo-{period}.svg"));
        let out = kernpack(&[
            "demo",
            "--period",
            period,
            "--nf",
            "100000",
            "--plot",
            plot.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "--period {period}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_diverging_ensemble_says_so() {
    // dt = 1 with F = 8: RK4 is unstable and the states overflow.
    let out = kernpack(&[
        "lorenz96",
        "--members",
        "2",
        "--steps",
        "200",
        "--dt",
        "1",
        "--backend",
        "cpu",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("diverged"),
        "{}",
        text(&out.stderr)
    );
    let calm = kernpack(&[
        "lorenz96",
        "--members",
        "2",
        "--steps",
        "20",
        "--backend",
        "cpu",
    ]);
    assert!(
        calm.status.success() && !text(&calm.stderr).contains("diverged"),
        "{}",
        text(&calm.stderr)
    );
}

/// `kernpack lorenz63` fixed-step and `--adaptive`: CSV rows per saved time
/// and member, the steps taken reported, the adaptive options refused
/// without --adaptive and bad tolerances named.
#[test]
fn lorenz63_runs_fixed_and_adaptive() {
    let csv = scratch("l63.csv");
    let csv_arg = csv.to_str().unwrap();
    let fixed = kernpack(&[
        "lorenz63",
        "--members",
        "3",
        "--steps",
        "100",
        "--save-at",
        "0,50",
        "--backend",
        "cpu",
        "--out",
        csv_arg,
    ]);
    assert!(fixed.status.success(), "{}", text(&fixed.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 1 + 3 * 3, "{rows}");
    let adaptive = kernpack(&[
        "lorenz63",
        "--members",
        "4",
        "--adaptive",
        "--t-end",
        "2",
        "--rtol",
        "1e-8",
        "--atol",
        "1e-8",
        "--save-times",
        "0.5,1",
        "--backend",
        "cpu",
        "--out",
        csv_arg,
    ]);
    assert!(adaptive.status.success(), "{}", text(&adaptive.stderr));
    assert!(
        text(&adaptive.stderr).contains("accepted steps"),
        "{}",
        text(&adaptive.stderr)
    );
    let rows = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(lines[0], "t,member,x,y,z,accepted,rejected,status");
    assert_eq!(lines.len(), 1 + 3 * 4, "{rows}");
    let last: Vec<&str> = lines[lines.len() - 1].split(',').collect();
    assert_eq!((last[0], last[1], last[7]), ("2", "3", "0"));
    assert!(last[5].parse::<u32>().unwrap() > 20, "{last:?}");
    let stopped = kernpack(&[
        "lorenz63",
        "--members",
        "2",
        "--adaptive",
        "--max-steps",
        "3",
        "--backend",
        "cpu",
    ]);
    assert!(
        stopped.status.success() && text(&stopped.stderr).contains("members stopped before"),
        "{}",
        text(&stopped.stderr)
    );
    let without = kernpack(&["lorenz63", "--rtol", "1e-6", "--backend", "cpu"]);
    assert!(
        !without.status.success() && text(&without.stderr).contains("--adaptive"),
        "{}",
        text(&without.stderr)
    );
    let bad = kernpack(&["lorenz63", "--adaptive", "--rtol", "-1", "--backend", "cpu"]);
    assert!(
        !bad.status.success() && text(&bad.stderr).contains("rtol"),
        "{}",
        text(&bad.stderr)
    );
}

/// `kernpack lorenz96 --save-at` / `lorenz05 --save-at`: CSV rows per saved
/// step and member, steps as given; with --every, or unsorted, refused.
#[test]
fn lorenz_ensembles_save_states_at_chosen_steps() {
    let csv = scratch("l96_save_at.csv");
    let csv_arg = csv.to_str().unwrap();
    let out = kernpack(&[
        "lorenz96",
        "--members",
        "2",
        "--steps",
        "20",
        "--save-at",
        "0,7,20",
        "--backend",
        "cpu",
        "--out",
        csv_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    let steps: Vec<&str> = rows
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(steps, ["0", "0", "7", "7", "20", "20"], "{rows}");
    let out = kernpack(&[
        "lorenz05",
        "--members",
        "1",
        "--n",
        "240",
        "--k",
        "8",
        "--j",
        "6",
        "--steps",
        "6",
        "--save-at",
        "2,5",
        "--backend",
        "cpu",
        "--out",
        csv_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 1 + 2, "{rows}");
    let both = kernpack(&[
        "lorenz96",
        "--steps",
        "20",
        "--every",
        "5",
        "--save-at",
        "3",
        "--backend",
        "cpu",
    ]);
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("--every"),
        "{}",
        text(&both.stderr)
    );
    let unsorted = kernpack(&[
        "lorenz96",
        "--steps",
        "20",
        "--save-at",
        "9,3",
        "--backend",
        "cpu",
    ]);
    assert_eq!(
        unsorted.status.code(),
        Some(1),
        "{}",
        text(&unsorted.stderr)
    );
    assert!(
        text(&unsorted.stderr).contains("sorted and unique"),
        "{}",
        text(&unsorted.stderr)
    );
}

/// `kernpack lorenz05 --params FILE`: F (or F, b, c) per member from a file,
/// each member's final state as its run alone with those values as
/// --forcing, --b, --c; a file of the wrong shape refused, naming it.
#[test]
fn lorenz05_takes_per_member_parameters_from_a_file() {
    let init = scratch("l05_init.csv");
    let rows: Vec<String> = (0..3)
        .map(|m| {
            (0..40)
                .map(|i| format!("{}", 3.0 + ((i * 7 + m * 3) % 11) as f64 * 0.5))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    std::fs::write(&init, rows.join("\n")).unwrap();
    let small = [
        "--n",
        "40",
        "--k",
        "4",
        "--j",
        "2",
        "--steps",
        "30",
        "--backend",
        "cpu",
        "--out",
        "-",
    ];
    let final_rows = |extra: &[&str], init: &str| -> Vec<String> {
        let mut args = vec!["lorenz05", "--init", init];
        args.extend_from_slice(&small);
        args.extend_from_slice(extra);
        let out = kernpack(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        // Without the step and member columns.
        text(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.splitn(3, ',').nth(2).unwrap().to_owned())
            .collect()
    };
    let values = [(12.0, 8.0, 2.5), (15.5, 10.0, 3.0), (17.25, 11.5, 3.75)];
    for width in [1, 3] {
        let params = scratch(&format!("l05_params{width}.csv"));
        let lines: Vec<String> = values
            .iter()
            .map(|(f, b, c)| match width {
                1 => format!("{f}"),
                _ => format!("{f},{b},{c}"),
            })
            .collect();
        std::fs::write(&params, lines.join("\n")).unwrap();
        let got = final_rows(
            &["--params", params.to_str().unwrap()],
            init.to_str().unwrap(),
        );
        assert_eq!(got.len(), 3);
        for (m, (f, b, c)) in values.iter().enumerate() {
            let one = scratch(&format!("l05_one{m}.csv"));
            std::fs::write(&one, &rows[m]).unwrap();
            let (f, b, c) = (f.to_string(), b.to_string(), c.to_string());
            let mut scalars = vec!["--forcing", f.as_str()];
            if width == 3 {
                scalars.extend_from_slice(&["--b", b.as_str(), "--c", c.as_str()]);
            }
            let alone = final_rows(&scalars, one.to_str().unwrap());
            assert_eq!(got[m], alone[0], "member {m}, {width} columns");
        }
        // With --save-at: the frames of steps 0 and 30, the last the final states.
        let saved = final_rows(
            &["--params", params.to_str().unwrap(), "--save-at", "0,30"],
            init.to_str().unwrap(),
        );
        assert_eq!(saved.len(), 6, "{width} columns");
        assert_eq!(saved[3..], got[..], "save_at, {width} columns");
    }
    let bad = scratch("l05_params_bad.csv");
    std::fs::write(&bad, "15,10\n15,10\n15,10\n").unwrap();
    let mut args = vec!["lorenz05", "--init", init.to_str().unwrap(), "--params"];
    args.push(bad.to_str().unwrap());
    args.extend_from_slice(&small);
    let out = kernpack(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("F, b, c"),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(&bad, "15\n15\n").unwrap();
    let out = kernpack(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("2 rows of parameters for 3 members"),
        "{}",
        text(&out.stderr)
    );
}
