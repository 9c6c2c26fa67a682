//! The column types of values the store keeps that are not plain text or numbers: the typed
//! IDs as text columns (bound and read as they are, with no text in between; a stored ID
//! was checked when it was made, so a row's is taken as it is) and yes/no flags.

use sqlx::any::{Any, AnyTypeInfo, AnyValueRef};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Type};

use crate::model::ids::{AgentId, EventId, RoomId, SessionId, UserId};

/// Declares each ID type a text column.
macro_rules! id_column {
    ($($name:ident),*) => {$(
        impl Type<Any> for $name {
            fn type_info() -> AnyTypeInfo {
                <String as Type<Any>>::type_info()
            }

            fn compatible(ty: &AnyTypeInfo) -> bool {
                <String as Type<Any>>::compatible(ty)
            }
        }

        impl Encode<'_, Any> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <Any as Database>::ArgumentBuffer,
            ) -> Result<IsNull, BoxDynError> {
                <String as Encode<Any>>::encode(self.as_str().to_owned(), buf)
            }
        }

        impl<'r> Decode<'r, Any> for $name {
            fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
                Ok($name::new(<String as Decode<Any>>::decode(value)?))
            }
        }
    )*};
}

id_column!(AgentId, EventId, RoomId, SessionId, UserId);

/// A yes/no column, stored as the integer 0 or 1 in both databases: SQLite has no boolean
/// type, and the same statements (`removed = 0`) then read the same on PostgreSQL. Bind
/// and read flags as this, never as `bool`, which PostgreSQL would refuse for an integer
/// column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl From<Flag> for bool {
    fn from(flag: Flag) -> bool {
        flag.0
    }
}

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <i64 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <i64 as Type<Any>>::compatible(ty)
    }
}

impl Encode<'_, Any> for Flag {
    fn encode_by_ref(
        &self,
        buf: &mut <Any as Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <i64 as Encode<Any>>::encode(i64::from(self.0), buf)
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: AnyValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Flag(<i64 as Decode<Any>>::decode(value)? != 0))
    }
}
