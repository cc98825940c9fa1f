//! The `time` group: the current time anywhere, and conversion between zones.

use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use serde_json::{Value, json};
use toolgate_core::ToolDefinition;

use super::arguments::{definition, optional_string, string_argument};
use crate::error::ToolboxError;
use crate::output::ToolOutput;

pub(super) const GROUP: &str = "time";
pub(super) const DISPLAY_NAME: &str = "Time";
pub(super) const DESCRIPTION: &str =
    "Current date and time in any timezone, and conversion of a time between timezones";

const NOW: &str = "time_now";
const CONVERT: &str = "time_convert";

pub(super) fn definitions() -> Result<Vec<ToolDefinition>, ToolboxError> {
    Ok(vec![
        definition(
            NOW,
            "Current date and time in an IANA timezone (default: this machine's timezone).",
            json!({
                "type": "object",
                "properties": {
                    "timezone": {
                        "type": "string",
                        "description": "IANA timezone name, e.g. 'Europe/Paris' or 'America/New_York'"
                    }
                }
            }),
        )?,
        definition(
            CONVERT,
            "Convert a time from one IANA timezone to another.",
            json!({
                "type": "object",
                "properties": {
                    "time": {
                        "type": "string",
                        "description": "24-hour 'HH:MM' (today in the source timezone) or an ISO 8601 date-time"
                    },
                    "source_timezone": {"type": "string", "description": "IANA timezone of `time`"},
                    "target_timezone": {"type": "string", "description": "IANA timezone to convert to"}
                },
                "required": ["time", "source_timezone", "target_timezone"]
            }),
        )?,
    ])
}

/// Runs a `time` tool; `None` when `tool` is not one.
pub(super) fn call(tool: &str, arguments: &Value) -> Option<ToolOutput> {
    let result = match tool {
        NOW => now(arguments, Timestamp::now()),
        CONVERT => convert(arguments, Timestamp::now()),
        _ => return None,
    };
    Some(result.unwrap_or_else(|error| error))
}

fn now(arguments: &Value, at: Timestamp) -> Result<ToolOutput, ToolOutput> {
    let zone = match optional_string(arguments, "timezone")? {
        Some(name) => timezone(name, "timezone")?,
        None => TimeZone::system(),
    };
    Ok(ToolOutput::json(describe(&at.to_zoned(zone))))
}

fn convert(arguments: &Value, today: Timestamp) -> Result<ToolOutput, ToolOutput> {
    let time = string_argument(arguments, "time")?;
    let source = timezone(
        string_argument(arguments, "source_timezone")?,
        "source_timezone",
    )?;
    let target = timezone(
        string_argument(arguments, "target_timezone")?,
        "target_timezone",
    )?;
    let source_time = parse_time(time, &source, today)?;
    let target_time = source_time.with_time_zone(target);
    let difference = target_time.offset().seconds() - source_time.offset().seconds();
    Ok(ToolOutput::json(json!({
        "source": describe(&source_time),
        "target": describe(&target_time),
        "time_difference": format_difference(difference),
    })))
}

/// `HH:MM` is today's date in `zone`; otherwise an ISO 8601 date-time, with an
/// offset or a bracketed zone, or civil (read in `zone`).
fn parse_time(text: &str, zone: &TimeZone, today: Timestamp) -> Result<Zoned, ToolOutput> {
    let text = text.trim();
    // Full forms first: jiff reads a bare time out of a date-time too.
    let zoned = if let Ok(zoned) = text.parse::<Zoned>() {
        Ok(zoned)
    } else if let Ok(instant) = text.parse::<Timestamp>() {
        Ok(instant.to_zoned(zone.clone()))
    } else if let Ok(civil) = text.parse::<DateTime>() {
        civil.to_zoned(zone.clone())
    } else if let Ok(time) = text.parse::<Time>() {
        let date = today.to_zoned(zone.clone()).date();
        date.to_datetime(time).to_zoned(zone.clone())
    } else {
        return Err(ToolOutput::error(format!(
            "Parameter 'time' must be 'HH:MM' or an ISO 8601 date-time, got '{text}'."
        )));
    };
    zoned.map_err(|error| ToolOutput::error(format!("Parameter 'time': {error}.")))
}

fn timezone(name: &str, parameter: &str) -> Result<TimeZone, ToolOutput> {
    TimeZone::get(name).map_err(|_| {
        ToolOutput::error(format!(
            "Parameter '{parameter}': unknown timezone '{name}'; use an IANA name such as 'Europe/London'."
        ))
    })
}

fn describe(time: &Zoned) -> Value {
    let zone = time.time_zone();
    json!({
        "timezone": zone.iana_name().unwrap_or("local"),
        "datetime": time.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        "day_of_week": time.strftime("%A").to_string(),
        "is_dst": zone.to_offset_info(time.timestamp()).dst().is_dst(),
    })
}

fn format_difference(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    match minutes % 60 {
        0 => format!("{sign}{}h", minutes / 60),
        rest => format!("{sign}{}h{rest:02}m", minutes / 60),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn instant(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn now_reports_the_time_in_the_asked_zone() {
        let output = now(
            &json!({"timezone": "Asia/Kolkata"}),
            instant("2026-07-01T12:00:00Z"),
        )
        .unwrap();
        assert_eq!(
            output.structured.unwrap(),
            json!({
                "timezone": "Asia/Kolkata",
                "datetime": "2026-07-01T17:30:00+05:30",
                "day_of_week": "Wednesday",
                "is_dst": false,
            })
        );
    }

    #[test]
    fn convert_reads_hh_mm_as_today_in_the_source_zone() {
        let arguments = json!({
            "time": "09:00",
            "source_timezone": "Europe/Paris",
            "target_timezone": "America/New_York",
        });
        let output = convert(&arguments, instant("2026-07-01T06:00:00Z")).unwrap();
        let result = output.structured.unwrap();
        assert_eq!(result["source"]["datetime"], "2026-07-01T09:00:00+02:00");
        assert_eq!(result["source"]["is_dst"], true);
        assert_eq!(result["target"]["datetime"], "2026-07-01T03:00:00-04:00");
        assert_eq!(result["time_difference"], "-6h");
    }

    #[test]
    fn convert_takes_full_date_times_and_half_hour_offsets() {
        let arguments = json!({
            "time": "2026-01-15T23:45:00Z",
            "source_timezone": "UTC",
            "target_timezone": "Asia/Kolkata",
        });
        let result = convert(&arguments, Timestamp::UNIX_EPOCH)
            .unwrap()
            .structured
            .unwrap();
        assert_eq!(result["target"]["datetime"], "2026-01-16T05:15:00+05:30");
        assert_eq!(result["time_difference"], "+5h30m");
    }

    #[test]
    fn convert_keeps_the_date_of_a_civil_date_time() {
        let arguments = json!({
            "time": "2024-01-15T12:00:00",
            "source_timezone": "UTC",
            "target_timezone": "Asia/Tokyo",
        });
        let result = convert(&arguments, instant("2026-11-22T06:00:00Z"))
            .unwrap()
            .structured
            .unwrap();
        assert_eq!(result["source"]["datetime"], "2024-01-15T12:00:00+00:00");
        assert_eq!(result["target"]["datetime"], "2024-01-15T21:00:00+09:00");
    }

    #[test]
    fn bad_input_names_the_parameter() {
        let unknown =
            json!({"time": "09:00", "source_timezone": "Mars/Olympus", "target_timezone": "UTC"});
        let error = convert(&unknown, Timestamp::UNIX_EPOCH).unwrap_err();
        assert!(error.is_error);
        assert!(
            error.model_text().contains("'source_timezone'")
                && error.model_text().contains("Mars/Olympus"),
            "{}",
            error.model_text()
        );

        let garbled = json!({"time": "nine", "source_timezone": "UTC", "target_timezone": "UTC"});
        let error = convert(&garbled, Timestamp::UNIX_EPOCH).unwrap_err();
        assert!(
            error.model_text().contains("'time'"),
            "{}",
            error.model_text()
        );

        let missing = json!({"time": "09:00", "source_timezone": "UTC"});
        let error = convert(&missing, Timestamp::UNIX_EPOCH).unwrap_err();
        assert_eq!(
            error.model_text(),
            "Required parameter 'target_timezone' is missing."
        );
    }
}
