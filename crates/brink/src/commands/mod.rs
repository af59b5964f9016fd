//! The commands, one module each: `run`, `find`, `validate`, `demo`, `report`, `compare`, `history`, `show`, `serve` and `worker`. Each takes its raw
//! arguments (cli.rs), checks them into a configuration, runs, and returns the exit code or a
//! [`Fail`].

mod compare;
mod demo;
pub mod find;
mod history;
mod report;
pub mod run;
mod serve;
mod validate;
pub mod worker;

use crate::cli::Command;
use crate::exit::Fail;

pub fn dispatch(cmd: Command) -> Result<i32, Fail> {
    match cmd {
        Command::Run(a) => run::run_cmd(&a),
        Command::Find(a) => find::find_cmd(&a),
        Command::Validate(a) => validate::validate_cmd(&a),
        Command::Demo(a) => demo::demo_cmd(&a),
        Command::Report(a) => report::report_cmd(&a),
        Command::Compare(a) => compare::compare_cmd(&a),
        Command::History(a) => history::history_cmd(&a),
        Command::Show(a) => history::show_cmd(&a),
        Command::Serve(a) => serve::serve_cmd(&a),
        Command::Worker(a) => worker::worker_cmd(&a),
        Command::K8s(a) => crate::k8s::k8s_cmd(&a),
    }
}
