//! A small `--key value` parser: the CLI has a handful of options per command,
//! which does not justify an argument-parsing dependency.
use std::collections::HashMap;
use std::str::FromStr;

pub struct Args {
    values: HashMap<String, String>,
    switches: Vec<String>,
}

impl Args {
    /// `valued`: options that take a value; `switches`: options that do not.
    /// Anything else is an error naming the accepted options.
    pub fn parse(raw: &[String], valued: &[&str], switches: &[&str]) -> Result<Args, String> {
        let mut args = Args {
            values: HashMap::new(),
            switches: Vec::new(),
        };
        let mut it = raw.iter();
        while let Some(arg) = it.next() {
            let Some(name) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument {arg:?}"));
            };
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (name, None),
            };
            if valued.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .ok_or_else(|| format!("--{name} needs a value"))?
                        .clone(),
                };
                args.values.insert(name.to_owned(), value);
            } else if switches.contains(&name) && inline.is_none() {
                args.switches.push(name.to_owned());
            } else {
                let mut known: Vec<String> =
                    valued.iter().map(|v| format!("--{v} VALUE")).collect();
                known.extend(switches.iter().map(|s| format!("--{s}")));
                return Err(format!(
                    "unknown option --{name}; accepted: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(args)
    }

    pub fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        self.values
            .get(name)
            .map(|v| v.parse::<T>().map_err(|e| format!("--{name} {v:?}: {e}")))
            .transpose()
    }

    pub fn get_or<T: FromStr>(&self, name: &str, default: T) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        Ok(self.get(name)?.unwrap_or(default))
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}
